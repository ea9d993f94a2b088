// The families of tool-call syntax Tandem parses and constrains, one per way models write a
// call, chosen from the model's chat template and special tokens (or named by the operator
// with --tool-call-format). The parser (tool_call_parser.h) and the grammar
// (core/grammar/tool_call_grammar.h) switch on it; nothing else does.
//
//   kLlama3Json      Llama 3.1/3.2/3.3: {"name": "f", "parameters": {...}} as the whole
//                    message (optionally after <|python_tag|>); several separated by ";".
//   kHermes          Hermes 2 Pro / Hermes 3 / Qwen2.5 / Qwen3:
//                    <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, repeated.
//   kMistral         Mistral Nemo / v3 tokenizers: [TOOL_CALLS][{"name": "f", "arguments":
//                    {...}, "id": "abcdefghi"}, ...] ([TOOL_CALLS] a control token).
//   kFunctionaryV31  functionary v3.1: <function=f>{...}</function>, repeated.
//   kFunctionaryV32  functionary v3.2: >>>f\n{...} per call (>>>all\n for plain text).
//   kFirefunctionV2  firefunction-v2:  functools[{"name": "f", "arguments": {...}}, ...].
//   kCommandR        Command-R / R+ / R7B: Action: ```json\n[{"tool_name": "f",
//                    "parameters": {...}}]\n``` (R7B: <|START_ACTION|>[...]<|END_ACTION|>).
//   kDeepSeekR1      DeepSeek-R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
//                    \n```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>.
//
// Thread-safe (no state).
#ifndef TANDEM_CORE_TOOLCALL_TOOL_CALL_FORMAT_H_
#define TANDEM_CORE_TOOLCALL_TOOL_CALL_FORMAT_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::toolcall {

enum class ToolCallFormat {
  kNone,  // the model has no tool syntax: a request with tools is refused
  kLlama3Json,
  kHermes,
  kMistral,
  kFunctionaryV31,
  kFunctionaryV32,
  kFirefunctionV2,
  kCommandR,
  kDeepSeekR1,
};

// "none", "llama3_json", "hermes", "mistral", "functionary_v3.1", "functionary_v3.2",
// "firefunction_v2", "command_r", "deepseek_r1".
absl::string_view ToolCallFormatName(ToolCallFormat format);

// The inverse; kInvalidArgument naming the name and listing the known ones.
absl::StatusOr<ToolCallFormat> ParseToolCallFormatName(absl::string_view name);

// Every format but kNone, in the order above (tests, help texts).
std::vector<ToolCallFormat> AllToolCallFormats();

// The format a model writes calls in, from its chat template's source (empty when it has
// none) and its vocabulary (`has_token`: a token of exactly this text exists); kNone when
// neither says. The template's own markers decide first, then the special tokens.
ToolCallFormat DetectToolCallFormat(absl::string_view template_source,
                                    absl::FunctionRef<bool(absl::string_view)> has_token);

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_TOOL_CALL_FORMAT_H_
