// Ids for the tool calls a response returns (OpenAI's `tool_calls[].id`), in the shape the
// family's template accepts back when the client sends the call and its result in the next
// request: "call_" + 24 letters and digits; Mistral's template refuses anything but exactly 9
// letters and digits.
#ifndef TANDEM_CORE_TOOLCALL_TOOL_CALL_ID_H_
#define TANDEM_CORE_TOOLCALL_TOOL_CALL_ID_H_

#include <string>

#include "absl/random/bit_gen_ref.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem::toolcall {

// Thread-safe as far as `gen` is.
std::string NewToolCallId(ToolCallFormat format, absl::BitGenRef gen);

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_TOOL_CALL_ID_H_
