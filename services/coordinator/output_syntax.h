// How the served model writes tool calls and reasoning, decided once when the coordinator
// starts: from its flags (--tool-call-format, --reasoning-format: "auto" or a name) or, for
// "auto", from the target's chat template and special tokens (core/toolcall/*_format.h). And
// the token bytes the reply parser reads: the vocabulary's, with control tokens as their text
// (a family's call marker may be one: Mistral's [TOOL_CALLS]).
//
// Thread-safe once built (immutable).
#ifndef TANDEM_SERVICES_COORDINATOR_OUTPUT_SYNTAX_H_
#define TANDEM_SERVICES_COORDINATOR_OUTPUT_SYNTAX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tokenizer/vocabulary.h"
#include "core/toolcall/reasoning_format.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem {

struct OutputSyntax {
  toolcall::ToolCallFormat tool_format = toolcall::ToolCallFormat::kNone;
  toolcall::ReasoningFormat reasoning = toolcall::ReasoningFormat::kNone;
  // By id: token_bytes with each control token (other than `end_ids`) as its text.
  std::vector<std::string> parse_token_bytes;
};

struct OutputSyntaxFlags {
  std::string tool_call_format = "auto";  // "auto", or a ToolCallFormatName ("none" included)
  std::string reasoning_format = "auto";  // "auto", "none" or "think"
};

// kInvalidArgument naming the flag for an unknown name. `vocab` may be null (the target sent
// no tokenizer): then only the template decides, and control tokens stay empty.
absl::StatusOr<OutputSyntax> ChooseOutputSyntax(const OutputSyntaxFlags& flags,
                                                absl::string_view chat_template,
                                                const Vocabulary* vocab,
                                                const std::vector<std::string>& token_bytes);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OUTPUT_SYNTAX_H_
