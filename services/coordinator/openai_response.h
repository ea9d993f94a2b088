// The JSON a Generate reply becomes on the OpenAI-compatible API: a chat.completion or
// text_completion object, or the chunks of a stream (chat.completion.chunk, or
// text_completion for /v1/completions). finish_reason is "stop" (an end-of-turn or stop
// token, a stop string), "tool_calls" (the reply made calls) or "length" (max_tokens, a full
// context); a reasoning model's reasoning is reasoning_content, as llama-server and vLLM
// return it; usage counts the prompt
// (with prompt_tokens_details.cached_tokens from the session's cache) and the completion;
// Tandem's own statistics go under "tandem": session_id, seed, speculation, timing.
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_RESPONSE_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_RESPONSE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "core/base/json.h"
#include "services/coordinator/openai_request.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// "stop", "tool_calls" or "length".
const char* OpenAiFinishReason(const v1::GenerationResult& result);

class OpenAiReply {
 public:
  // `id` names the reply ("chatcmpl-…", "cmpl-…"); `created` is Unix seconds.
  OpenAiReply(OpenAiEndpoint endpoint, std::string id, int64_t created, std::string model,
              bool include_usage);

  // The whole reply of a request that was not streamed; `logprobs` is the choice's
  // (openai_logprobs.h), null when not asked for.
  // `reasoning`: a reasoning model's reasoning (message.reasoning_content; left out when
  // empty). The result's tool calls become message.tool_calls (content null when the reply
  // has no text) and finish_reason "tool_calls".
  std::string Complete(const std::string& text, const std::string& reasoning,
                       const v1::GenerationResult& result, json::Value logprobs = nullptr) const;
  // --- #30 n choices ---
  // Choice `index` of a reply that was not streamed, as Complete makes its one choice.
  json::Object Choice(int32_t index, const std::string& text, const std::string& reasoning,
                      const v1::GenerationResult& result, json::Value logprobs = nullptr) const;
  // A reply of several choices (Choice): usage from `usage` (the final that carries the
  // request's, GenerationResult.request_usage), Tandem's statistics from `first` (choice 0's).
  std::string CompleteChoices(json::Array choices, const v1::GenerationResult& usage,
                              const v1::GenerationResult& first) const;
  // --- end ---

  // Stream chunks, each one JSON text (without SSE framing). Chat streams start with the
  // assistant's role, then text, then the finish reason with Tandem's statistics, then (with
  // include_usage) a chunk with no choices and the usage.
  // `index`: the choice the chunk is about (GenerateResponse.choice_index).
  std::string RoleChunk(int32_t index = 0) const;
  std::string TextChunk(const std::string& text, json::Value logprobs = nullptr,
                        int32_t index = 0) const;
  // A chat delta with what `delta` carries: content, reasoning_content, and tool_calls pieces
  // as OpenAI streams them (index; id, type and name in a call's first piece; arguments).
  std::string DeltaChunk(const v1::TokenDelta& delta, json::Value logprobs = nullptr,
                         int32_t index = 0) const;
  std::string FinishChunk(const v1::GenerationResult& result, int32_t index = 0) const;
  std::string UsageChunk(const v1::GenerationResult& result) const;

  bool chat() const { return endpoint_ == OpenAiEndpoint::kChatCompletions; }
  // #30 front: `system_fingerprint` in every reply and chunk (system_fingerprint.h); empty:
  // left out.
  void set_system_fingerprint(std::string fingerprint) {
    system_fingerprint_ = std::move(fingerprint);
  }
  bool include_usage() const { return include_usage_; }

 private:
  json::Object Head(bool chunk) const;
  std::string Chunk(json::Object choice, const v1::GenerationResult* result) const;

  OpenAiEndpoint endpoint_;
  std::string id_;
  int64_t created_;
  std::string model_;
  bool include_usage_;
  std::string system_fingerprint_;  // #30 front
};

// usage: prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens;
// the request's (request_usage) when the result carries it (several choices).
json::Object OpenAiUsage(const v1::GenerationResult& result);
// The "tandem" extension: session_id, seed, speculation and timing statistics.
json::Object TandemStatistics(const v1::GenerationResult& result);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_RESPONSE_H_
