// The JSON a Generate run becomes on Anthropic's Messages API: a "message" object, or its
// stream of Server-Sent Events, and Anthropic's error shape.
//
//   {"id": "msg_…", "type": "message", "role": "assistant", "model", "content": [blocks],
//    "stop_reason", "stop_sequence", "usage": {"input_tokens", "output_tokens",
//    "cache_read_input_tokens"}, "tandem": {...}}
//
// Blocks in order: a reasoning model's reasoning as {"type": "thinking", "thinking",
// "signature": ""}, the text as {"type": "text", "text"}, each tool call as {"type":
// "tool_use", "id", "name", "input"} (the arguments parsed; {} if they are not a JSON
// object). stop_reason: "tool_use" (the reply made calls), "max_tokens" (max_tokens, a full
// context), "stop_sequence" (a stop string; stop_sequence names it when the request had just
// one, else null: the coordinator does not say which matched), else "end_turn".
//
// A stream: message_start, ping, then per block content_block_start, content_block_delta
// (text_delta, thinking_delta, input_json_delta), content_block_stop; then message_delta
// (stop_reason, stop_sequence, usage) and message_stop. A failure after the start is an
// "error" event. Errors: {"type": "error", "error": {"type", "message"}} with Anthropic's
// type for the status (invalid_request_error 400, authentication_error 401,
// permission_error 403, not_found_error 404, request_too_large 413, rate_limit_error 429,
// overloaded_error 503/529, api_error otherwise).
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_ANTHROPIC_RESPONSE_H_
#define TANDEM_SERVICES_COORDINATOR_ANTHROPIC_RESPONSE_H_

#include <string>
#include <vector>

#include "core/base/json.h"
#include "services/coordinator/api_reply.h"
#include "services/coordinator/http_error.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// Anthropic's error type for an HTTP status.
const char* AnthropicErrorType(int status);
// {"type": "error", "error": {"type", "message"}}.
std::string AnthropicErrorBody(const HttpError& error);

class AnthropicReply : public ApiReply {
 public:
  // `id` names the message ("msg_…"); `stop_sequences` are the request's.
  AnthropicReply(std::string id, std::string model, std::vector<std::string> stop_sequences);

  std::string Complete(const CollectedReply& reply) override;
  std::vector<std::string> Events(const v1::GenerateResponse& message) override;
  std::string StreamError(const HttpError& error) override;
  std::string ErrorBody(const HttpError& error) const override { return AnthropicErrorBody(error); }

  const char* StopReason(const v1::GenerationResult& result) const;
  // The stop string that ended the reply when that is known, else null.
  json::Value StopSequence(const v1::GenerationResult& result) const;

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  // Closes the open block (if any) and opens one of `kind`.
  void Open(Block kind, json::Object start, std::vector<std::string>* events);
  void Close(std::vector<std::string>* events);
  void Delta(json::Object delta, std::vector<std::string>* events);

  std::string id_;
  std::string model_;
  std::vector<std::string> stop_sequences_;
  bool started_ = false;
  Block open_ = Block::kNone;
  int index_ = -1;  // the open block's index
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ANTHROPIC_RESPONSE_H_
