// The text of a tool-call constraint (ConstraintSpec::Kind::kToolCalls): the family's call
// syntax, the functions and the tool choice, as one canonical JSON document, so equal requests
// give equal texts (ConstraintCache's key) and the coordinator can ship it to the workers:
//
//   {"format":"hermes","tools":[{"name":"get_weather","parameters":{...}}],
//    "choice":"auto"|"required"|"none"|{"function":"get_weather"},"parallel":true}
//
// The descriptions are left out (they change no grammar). The text crosses the wire, so the
// parser trusts nothing: kInvalidArgument naming the culprit (fuzzed: fuzz/tool_call_spec_fuzzer).
//
// Thread-safe: plain functions.
#ifndef TANDEM_CORE_GRAMMAR_TOOL_CALL_SPEC_H_
#define TANDEM_CORE_GRAMMAR_TOOL_CALL_SPEC_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/toolcall/tool_call.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem {

struct ToolCallSpec {
  toolcall::ToolCallFormat format = toolcall::ToolCallFormat::kNone;
  std::vector<toolcall::ToolFunction> tools;  // descriptions empty
  toolcall::ToolChoice choice;
};

// Bounds ParseToolCallSpecText enforces.
inline constexpr size_t kMaxToolCallSpecBytes = size_t{1} << 20;
inline constexpr size_t kMaxToolCallTools = 128;
inline constexpr size_t kMaxToolNameBytes = 64;

// OK if `name` is a valid function name ([A-Za-z0-9_.-]{1,64}), else kInvalidArgument naming it.
absl::Status CheckToolName(absl::string_view name);

// The canonical text (compact JSON, members in the order above).
std::string ToolCallSpecText(toolcall::ToolCallFormat format,
                             const std::vector<toolcall::ToolFunction>& tools,
                             const toolcall::ToolChoice& choice);

// The spec of a text ToolCallSpecText wrote. kInvalidArgument naming the culprit: not JSON, a
// missing or unknown member, an unknown format or "none", no tools or more than
// kMaxToolCallTools, a name outside [A-Za-z0-9_.-]{1,64} or repeated, a named choice that
// names no tool, a text past kMaxToolCallSpecBytes.
absl::StatusOr<ToolCallSpec> ParseToolCallSpecText(absl::string_view text);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_TOOL_CALL_SPEC_H_
