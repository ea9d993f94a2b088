// Anthropic's Messages API request body (POST /v1/messages, POST /v1/messages/count_tokens)
// turned into the same tandem.v1.GenerateRequest a chat completion becomes (the HTTP handler
// then calls the same Coordinator::Generate, or Tokenize for count_tokens):
//
//   model                  the model (the handler checks it)
//   system                 a string or text blocks -> a first "system" message
//   messages[i]            role "user" | "assistant"; content a string or blocks:
//     {"type": "text", "text"}                      the turn's text (blocks joined)
//     {"type": "tool_use", "id", "name", "input"}   (assistant) a ToolCall, input as JSON text
//     {"type": "tool_result", "tool_use_id", "content", "is_error"}
//                                                    (user) a "tool" message before the turn's
//                                                    text; content a string or text blocks
//     {"type": "thinking" | "redacted_thinking"}    (assistant) dropped, as a template does
//   max_tokens             required, >= 1
//   stop_sequences         stop strings
//   temperature, top_p, top_k   sampling (unset: Tandem's defaults)
//   tools[i]               {"name", "description", "input_schema"} (type absent or "custom")
//   tool_choice            {"type": "auto" | "any" | "tool" (with "name") | "none",
//                           "disable_parallel_tool_use"}
//   stream                 Anthropic's SSE events (anthropic_response.h)
//   metadata               ignored; cache_control on blocks and tools ignored
//
// Anything else (images, documents, server tools, `thinking`, `container`, ...) is refused:
// kInvalidArgument naming the field (openai_fields.h's param), as a wrong type or a missing
// required field is.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_ANTHROPIC_REQUEST_H_
#define TANDEM_SERVICES_COORDINATOR_ANTHROPIC_REQUEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

enum class AnthropicEndpoint {
  kMessages,     // POST /v1/messages: max_tokens required
  kCountTokens,  // POST /v1/messages/count_tokens: no max_tokens, no sampling, no stream
};

struct AnthropicRequest {
  std::string model;
  bool stream = false;
  v1::GenerateRequest generate;  // its chat holds the conversation and the tools
};

// Parses and converts one request body (JSON nested at most 64 deep).
absl::StatusOr<AnthropicRequest> ParseAnthropicRequest(absl::string_view body,
                                                       AnthropicEndpoint endpoint);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ANTHROPIC_REQUEST_H_
