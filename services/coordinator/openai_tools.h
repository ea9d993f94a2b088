// The tool fields of an OpenAI-style chat request as the gRPC request carries them:
//
//   tools               [{"type": "function", "function": {"name": N, "description": D,
//                        "parameters": {...}, "strict": B}}]  -> ChatConversation.tools
//   tool_choice         "none" | "auto" | "required" |
//                       {"type": "function", "function": {"name": N}}  -> tool_choice
//   parallel_tool_calls bool                                  -> parallel_tool_calls
//   messages[i].tool_calls    [{"id", "type": "function", "function": {"name", "arguments"}}]
//   messages[i].tool_call_id  (a "tool" turn)
//
// The shape is checked here (a function name as the tool-call grammar takes it,
// CheckToolName: 1 to 64 of a-z, A-Z, 0-9, '_', '.', '-'; names unique; `parameters` an object);
// how the fields fit together (a tool_choice naming a tool that exists) is the coordinator's to
// judge, for gRPC and HTTP alike (reply_syntax.h), and what the parameters schema says its
// compiler's. `strict` is accepted and not used: forced calls always match the schema.
//
// Errors are kInvalidArgument naming the field (openai_fields.h).
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_TOOLS_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_TOOLS_H_

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "tandem/v1/generator.pb.h"

namespace tandem::openai {

// Whether `key` is a top-level tool field (tools, tool_choice, parallel_tool_calls).
bool IsToolField(absl::string_view key);

// Reads one top-level tool field into `request` (IsToolField(key)).
absl::Status ToolField(absl::string_view key, const json::Value& value,
                       v1::GenerateRequest* request);

// One function tool as every HTTP API shapes it (the OpenAI chat's nested "function", the
// Responses API's flat one, Anthropic's input_schema): checks the name (CheckToolName) and
// its uniqueness among `names` (the request's tools so far), and that `parameters` (null:
// any object) is an object, then appends the tool to the request's chat. Errors name
// `field` + ".name" / `parameters_field`.
absl::Status AddTool(absl::string_view field, std::string name, std::string description,
                     const json::Value* parameters, absl::string_view parameters_field,
                     absl::flat_hash_set<std::string>* names, v1::GenerateRequest* request);

// A message's `tool_calls` (field: "messages[i].tool_calls").
absl::Status MessageToolCalls(absl::string_view field, const json::Value& value,
                              v1::ChatMessage* message);

}  // namespace tandem::openai

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_TOOLS_H_
