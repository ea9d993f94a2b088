// The JSON a Generate run becomes on OpenAI's Responses API: a "response" object, or its
// stream of Server-Sent Events (each with a sequence_number from 0).
//
//   {"id": "resp_…", "object": "response", "created_at", "status": "completed" |
//    "incomplete", "incomplete_details": null | {"reason": "max_output_tokens"}, "model",
//    "output": [items], "usage": {"input_tokens", "input_tokens_details": {"cached_tokens"},
//    "output_tokens", "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"},
//    "error": null, "store": false, the request's instructions, max_output_tokens,
//    temperature, top_p, tools, tool_choice, text, metadata echoed, "tandem": {...}}
//
// Items in order: a reasoning model's reasoning {"type": "reasoning", "id": "rs_…",
// "summary": [], "content": [{"type": "reasoning_text", "text"}]}, the text {"type":
// "message", "id": "msg_…", "role": "assistant", "status", "content": [{"type":
// "output_text", "text", "annotations": []}]}, each call {"type": "function_call", "id":
// "fc_…", "call_id", "name", "arguments", "status"}.
//
// A stream: response.created, response.in_progress; per item response.output_item.added,
// then for a message response.content_part.added, response.output_text.delta…,
// response.output_text.done, response.content_part.done; for a call
// response.function_call_arguments.delta…, .done; for reasoning response.content_part.added,
// response.reasoning_text.delta…, .done, response.content_part.done; then
// response.output_item.done; finally response.completed (response.incomplete when max_output_tokens
// or the context ended it) with the whole response. A failure after the start is an "error" event
// ({"type": "error", "code", "message", "param"}).
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_RESPONSES_RESPONSE_H_
#define TANDEM_SERVICES_COORDINATOR_RESPONSES_RESPONSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "services/coordinator/api_reply.h"
#include "services/coordinator/responses_request.h"

namespace tandem {

class ResponsesReply : public ApiReply {
 public:
  // `id` names the response ("resp_…"); `created` is Unix seconds; `request` gives the
  // fields echoed.
  ResponsesReply(std::string id, int64_t created, std::string model,
                 const ResponsesRequest& request);

  std::string Complete(const CollectedReply& reply) override;
  std::vector<std::string> Events(const v1::GenerateResponse& message) override;
  std::string StreamError(const HttpError& error) override;
  std::string ErrorBody(const HttpError& error) const override;

 private:
  enum class Kind { kNone, kReasoning, kMessage, kCall };
  // The response object: `status` "in_progress", "completed" or "incomplete".
  json::Object Response(const char* status, json::Array output,
                        const v1::GenerationResult* result) const;
  json::Array Output(const CollectedReply& reply) const;
  std::string Event(const char* type, json::Object fields);
  // Opens an item of `kind` (closing the open one) and closes the open one.
  void Open(Kind kind, json::Object item, std::vector<std::string>* events);
  void Close(std::vector<std::string>* events);
  std::string ItemId(const char* prefix, int index) const;

  std::string id_;
  int64_t created_;
  std::string model_;
  json::Object echo_;  // the request's fields every response object repeats
  int64_t sequence_ = 0;
  bool started_ = false;
  // The open item while streaming, and the items done so far (for the final response).
  Kind open_ = Kind::kNone;
  int index_ = -1;
  json::Object item_;
  std::string item_text_;
  json::Array done_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_RESPONSES_RESPONSE_H_
