#include "core/decoder/architecture.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem {
namespace {

struct Traits {
  const char* name;
  RopeLayout rope_layout;
  bool qkv_bias;
  bool qk_norm;
  bool fused;  // one q|k|v matrix and one gate|up matrix
  bool gemma;
  int64_t sliding_pattern;  // llama.cpp's default when the file has none
};

// llama.cpp runs llama with interleaved pairs (the converter permutes its q/k rows) and the
// others with NEOX (half) pairs.
const std::vector<Traits>& All() {
  static const auto* all = new std::vector<Traits>{
      {"llama", RopeLayout::kInterleaved, false, false, false, false, 0},
      {"qwen2", RopeLayout::kHalf, true, false, false, false, 0},
      {"qwen3", RopeLayout::kHalf, false, true, false, false, 0},
      {"phi3", RopeLayout::kHalf, false, false, true, false, 0},
      {"gemma2", RopeLayout::kHalf, false, false, false, true, 2},
      {"gemma3", RopeLayout::kHalf, false, true, false, true, 6},
  };
  return *all;
}

}  // namespace

const std::string& SupportedArchitectures() {
  static const auto* list = new std::string(absl::StrJoin(
      All(), ", ", [](std::string* out, const Traits& t) { absl::StrAppend(out, t.name); }));
  return *list;
}

absl::Status ApplyArchitecture(const std::string& file, ModelConfig* config) {
  for (const Traits& t : All()) {
    if (config->architecture != t.name) continue;
    config->rope_layout = t.rope_layout;
    config->qkv_bias = t.qkv_bias;
    config->qk_norm = t.qk_norm;
    config->fused_projections = t.fused;
    config->gemma = t.gemma;
    config->sliding_pattern = t.sliding_pattern;
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat(file, ": architecture '", config->architecture,
                                               "' is not supported (", SupportedArchitectures(),
                                               ")"));
}

}  // namespace tandem
