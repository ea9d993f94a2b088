#include "client/logits/logits_tool.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/logits/logits_metrics.h"
#include "client/logits/logits_runner.h"
#include "client/logits/npy.h"
#include "core/base/status_macros.h"
#include "core/decoder/model.h"
#include "core/kernels/matmul.h"

namespace tandem {
namespace {

absl::Status CheckOptions(const LogitsToolOptions& o) {
  if (o.model.empty()) return absl::InvalidArgumentError("--model is required");
  if (o.tokens.empty() == o.tokens_file.empty()) {
    return absl::InvalidArgumentError("give exactly one of --tokens and --tokens-file");
  }
  if (o.out.empty() && o.compare.empty() && o.kl_base.empty()) {
    return absl::InvalidArgumentError("nothing to do: give --out, --compare and/or --kl-base");
  }
  if (!(o.atol >= 0) || std::isinf(o.atol)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--atol ", o.atol, " is not a finite value >= 0"));
  }
  if (o.threads < 1) return absl::InvalidArgumentError(absl::StrCat("--threads ", o.threads));
  return absl::OkStatus();
}

absl::StatusOr<ModelLoadOptions> LoadOptions(const LogitsToolOptions& o) {
  absl::StatusOr<ActivationPrecision> activations = ParseActivationPrecision(o.activations);
  if (!activations.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--activations: ", activations.status().message()));
  }
  ModelLoadOptions options;
  options.activations = *activations;
  return options;
}

absl::StatusOr<std::vector<int32_t>> ReadTokens(const LogitsToolOptions& o) {
  if (!o.tokens.empty()) return ParseTokenIds(o.tokens, "--tokens");
  std::ifstream in(o.tokens_file, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("--tokens-file ", o.tokens_file, ": cannot open (",
                                            std::strerror(errno), ")"));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseTokenIds(text, absl::StrCat("--tokens-file ", o.tokens_file));
}

// A reference matrix: read now (before the model runs), its shape checked once it is known.
absl::StatusOr<std::optional<NpyArray>> ReadMatrix(const std::string& path) {
  if (path.empty()) return std::optional<NpyArray>();
  ASSIGN_OR_RETURN(NpyArray array, ReadNpy(path));
  return std::optional<NpyArray>(std::move(array));
}

absl::Status CheckShape(const NpyArray& array, const std::string& path, int64_t rows,
                        int64_t cols) {
  if (array.shape.size() == 2 && array.shape[0] == rows && array.shape[1] == cols) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": shape (", absl::StrJoin(array.shape, ", "), ") but the model gives [",
                   rows, ", ", cols, "] (tokens × vocabulary)"));
}

std::string FormatComparison(const LogitsComparison& c) {
  return absl::StrFormat("max_abs %.6g at [%d, %d]\nrms %.6g\nargmax_agree %d/%d\n", c.max_abs,
                         c.max_abs_row, c.max_abs_col, c.rms, c.argmax_agree, c.rows);
}

std::string FormatKl(const KlStats& s) {
  return absl::StrFormat("kl_mean %.6g\nkl_p99 %.6g\nkl_max %.6g\ntop_agree %d/%d\n", s.mean, s.p99,
                         s.max, s.top_agree, s.rows);
}

// The work; returns the exit code (0 or 1) or the error that makes it 2.
absl::StatusOr<int> Run(const LogitsToolOptions& o, std::string& out) {
  RETURN_IF_ERROR(CheckOptions(o));
  ASSIGN_OR_RETURN(const ModelLoadOptions load_options, LoadOptions(o));
  ASSIGN_OR_RETURN(std::vector<int32_t> tokens, ReadTokens(o));
  ASSIGN_OR_RETURN(std::optional<NpyArray> reference, ReadMatrix(o.compare));
  ASSIGN_OR_RETURN(std::optional<NpyArray> base, ReadMatrix(o.kl_base));
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(o.model, load_options));
  ASSIGN_OR_RETURN(std::vector<float> logits, AllPositionLogits(*model, tokens, o.threads));
  const auto rows = static_cast<int64_t>(tokens.size());
  const int64_t cols = model->config().vocab_size;
  if (reference) RETURN_IF_ERROR(CheckShape(*reference, o.compare, rows, cols));
  if (base) RETURN_IF_ERROR(CheckShape(*base, o.kl_base, rows, cols));
  if (!o.out.empty()) {
    RETURN_IF_ERROR(WriteNpyF32(o.out, {rows, cols}, logits));
    absl::StrAppend(&out, "wrote ", o.out, " [", rows, ", ", cols, "] float32\n");
  }
  const std::vector<double> mine(logits.begin(), logits.end());
  int exit_code = 0;
  if (reference) {
    ASSIGN_OR_RETURN(LogitsComparison c, CompareLogits(mine, reference->values, rows, cols));
    out += FormatComparison(c);
    if (!(c.max_abs <= o.atol)) exit_code = 1;
  }
  if (base) {
    ASSIGN_OR_RETURN(KlStats s, KlDivergence(base->values, mine, rows, cols));
    out += FormatKl(s);
  }
  return exit_code;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> ParseTokenIds(absl::string_view text,
                                                   absl::string_view source) {
  text = absl::StripAsciiWhitespace(text);
  if (absl::ConsumePrefix(&text, "[") && !absl::ConsumeSuffix(&text, "]")) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": '[' without a closing ']'"));
  }
  std::vector<int32_t> ids;
  for (absl::string_view item :
       absl::StrSplit(text, absl::ByAnyChar(", \t\r\n"), absl::SkipEmpty())) {
    int32_t id = 0;
    const bool digits = item.find_first_not_of("0123456789") == absl::string_view::npos;
    if (!digits || !absl::SimpleAtoi(item, &id)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": '", item, "' (item ", ids.size() + 1, ") is not a token id"));
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no token ids"));
  return ids;
}

LogitsToolResult RunLogitsTool(const LogitsToolOptions& options) {
  LogitsToolResult result;
  absl::StatusOr<int> code = Run(options, result.out);
  if (!code.ok()) {
    result.exit_code = 2;
    result.err = absl::StrCat("tandem-logits: ", code.status().message(), "\n");
    return result;
  }
  result.exit_code = *code;
  if (*code == 1) {
    result.err = absl::StrCat("tandem-logits: max abs difference from ", options.compare,
                              " exceeds --atol ", options.atol, "\n");
  }
  return result;
}

}  // namespace tandem
