#include "services/coordinator/output_syntax.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

absl::Status FlagError(absl::string_view flag, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", status.message()));
}

}  // namespace

absl::StatusOr<OutputSyntax> ChooseOutputSyntax(const OutputSyntaxFlags& flags,
                                                absl::string_view chat_template,
                                                const Vocabulary* vocab,
                                                const std::vector<std::string>& token_bytes) {
  absl::flat_hash_set<std::string> texts;
  if (vocab != nullptr) texts.insert(vocab->tokens.begin(), vocab->tokens.end());
  auto has_token = [&texts](absl::string_view t) { return texts.contains(t); };
  OutputSyntax syntax;
  if (flags.tool_call_format == "auto") {
    syntax.tool_format = toolcall::DetectToolCallFormat(chat_template, has_token);
  } else {
    absl::StatusOr<toolcall::ToolCallFormat> f =
        toolcall::ParseToolCallFormatName(flags.tool_call_format);
    if (!f.ok()) return FlagError("tool-call-format", f.status());
    syntax.tool_format = *f;
  }
  if (flags.reasoning_format == "auto") {
    syntax.reasoning = toolcall::DetectReasoningFormat(chat_template, has_token);
  } else {
    absl::StatusOr<toolcall::ReasoningFormat> r =
        toolcall::ParseReasoningFormatName(flags.reasoning_format);
    if (!r.ok()) return FlagError("reasoning-format", r.status());
    syntax.reasoning = *r;
  }
  syntax.parse_token_bytes = token_bytes;
  if (vocab != nullptr) {
    absl::flat_hash_set<int32_t> ends(vocab->end_of_turn_ids.begin(),
                                      vocab->end_of_turn_ids.end());
    if (vocab->eos_id.has_value()) ends.insert(*vocab->eos_id);
    for (size_t id = 0; id < vocab->tokens.size() && id < token_bytes.size(); ++id) {
      if (vocab->types[id] == TokenType::kControl && !ends.contains(static_cast<int32_t>(id))) {
        syntax.parse_token_bytes[id] = vocab->tokens[id];
      }
    }
  }
  return syntax;
}

}  // namespace tandem
