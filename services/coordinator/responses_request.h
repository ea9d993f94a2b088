// OpenAI's Responses API request body (POST /v1/responses), stateless, turned into the same
// tandem.v1.GenerateRequest a chat completion becomes (the HTTP handler then calls the same
// Coordinator::Generate):
//
//   model                 the model (the handler checks it)
//   instructions          a first "system" message
//   input                 a string (one user message), or a list of items:
//     {"type": "message" (or no type), "role": "user" | "assistant" | "system" |
//      "developer" (as "system"), "content": a string or parts {"type": "input_text" |
//      "output_text", "text"}}
//     {"type": "function_call", "call_id", "name", "arguments"}  a call of the assistant
//                                          (joining the assistant turn just before it)
//     {"type": "function_call_output", "call_id", "output"}      a "tool" message
//     {"type": "reasoning"}                earlier reasoning: dropped, as templates drop it
//   max_output_tokens     max_tokens
//   temperature, top_p    sampling (unset: Tandem's defaults)
//   text.format           {"type": "text" | "json_object" | "json_schema", ...}
//                         (openai_constraint.h's FlatFormat)
//   tools[i]              {"type": "function", "name", "description", "parameters", "strict"}
//   tool_choice           "none" | "auto" | "required" | {"type": "function", "name"}
//   parallel_tool_calls, stream; store only false (nothing is stored); metadata, user,
//   service_tier, truncation "disabled", top_logprobs 0, include [] ignored
//
// Refused (kInvalidArgument naming the field): previous_response_id and conversation (nothing
// is stored), background, store true, built-in tools (web_search, file_search, ...),
// reasoning, images and files in input, any unknown field.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_RESPONSES_REQUEST_H_
#define TANDEM_SERVICES_COORDINATOR_RESPONSES_REQUEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct ResponsesRequest {
  std::string model;
  bool stream = false;
  v1::GenerateRequest generate;
  // Echoed in the response object as the request set them (null when unset).
  json::Value instructions;
  json::Value tools = json::Array{};
  json::Value tool_choice = "auto";
  json::Value text_format = json::Object{{"type", "text"}};
  json::Value temperature;
  json::Value top_p;
  json::Value max_output_tokens;
  json::Value metadata = json::Object{};
};

// Parses and converts one request body (JSON nested at most 64 deep).
absl::StatusOr<ResponsesRequest> ParseResponsesRequest(absl::string_view body);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_RESPONSES_REQUEST_H_
