// DetectToolCallFormat (tool_call_format.h): the chat template's own call markers first (the
// text it writes an assistant's tool_calls with, or tells the model to write), then the
// vocabulary's special tokens.
#include <vector>

#include "absl/strings/match.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem::toolcall {
namespace {

// Whether every one of `needles` occurs in `source`.
bool ContainsAll(absl::string_view source, const std::vector<absl::string_view>& needles) {
  for (absl::string_view needle : needles) {
    if (!absl::StrContains(source, needle)) return false;
  }
  return true;
}

// In order: a template may also carry a later family's marker (functionary v3.1 writes
// <|python_tag|> for its python tool; Hermes 3 and Command-R mention "parameters").
ToolCallFormat FromTemplate(absl::string_view source) {
  struct Rule {
    std::vector<absl::string_view> needles;
    ToolCallFormat format;
  };
  static const std::vector<Rule>* rules = new std::vector<Rule>{
      {{"<｜tool▁calls▁begin｜>"}, ToolCallFormat::kDeepSeekR1},
      {{">>>all"}, ToolCallFormat::kFunctionaryV32},
      {{"<function="}, ToolCallFormat::kFunctionaryV31},
      {{"functools["}, ToolCallFormat::kFirefunctionV2},
      {{"<|START_ACTION|>"}, ToolCallFormat::kCommandR},
      {{"Action:", "tool_name"}, ToolCallFormat::kCommandR},
      {{"[TOOL_CALLS]"}, ToolCallFormat::kMistral},
      {{"<tool_call>"}, ToolCallFormat::kHermes},
      {{"<|python_tag|>"}, ToolCallFormat::kLlama3Json},
      {{"ipython", "\"parameters\""}, ToolCallFormat::kLlama3Json},
  };
  for (const Rule& rule : *rules) {
    if (ContainsAll(source, rule.needles)) return rule.format;
  }
  return ToolCallFormat::kNone;
}

}  // namespace

ToolCallFormat DetectToolCallFormat(absl::string_view template_source,
                                    absl::FunctionRef<bool(absl::string_view)> has_token) {
  const ToolCallFormat from_template = FromTemplate(template_source);
  if (from_template != ToolCallFormat::kNone) return from_template;
  struct TokenRule {
    absl::string_view token;
    ToolCallFormat format;
  };
  // <tool_call> before <|python_tag|>: Hermes 3 is a Llama 3.1 fine-tune with both.
  static constexpr TokenRule kTokens[] = {
      {"<｜tool▁calls▁begin｜>", ToolCallFormat::kDeepSeekR1},
      {"[TOOL_CALLS]", ToolCallFormat::kMistral},
      {"<|START_ACTION|>", ToolCallFormat::kCommandR},
      {"<tool_call>", ToolCallFormat::kHermes},
      {"<|python_tag|>", ToolCallFormat::kLlama3Json},
  };
  for (const TokenRule& rule : kTokens) {
    if (has_token(rule.token)) return rule.format;
  }
  return ToolCallFormat::kNone;
}

}  // namespace tandem::toolcall
