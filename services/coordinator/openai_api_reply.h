// The OpenAI chat and text completion APIs as an ApiReply (api_reply.h): the JSON and SSE
// chunks of openai_response.h and openai_logprobs.h, framed as OpenAI frames them ("data:
// {chunk}" events, a chat stream opening with the role, the usage chunk with include_usage,
// "data: [DONE]" at the end, an error as "data: {"error": ...}").
//
// Several choices (`n`, issue #30; messages tagged with GenerateResponse.choice_index): a
// reply that is not streamed has one choice per index, each with its own text or message,
// finish_reason, logprobs, tool calls and reasoning (and its own "tandem" statistics); a
// streamed one's chunks carry their choice's index, each chat choice opening with its own role
// chunk, and chunks of different choices interleave as OpenAI's do. Usage counts the prompt
// once and every choice's completion (GenerationResult.request_usage); the reply's `metrics`
// and "tandem" are choice 0's; with include_usage the usage chunk comes once, after the last
// choice's finish.
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "services/coordinator/api_reply.h"
#include "services/coordinator/openai_logprobs.h"
#include "services/coordinator/openai_response.h"

namespace tandem {

class OpenAiApiReply : public ApiReply {
 public:
  // `logprobs`: the request asked for them; `choices`: how many it asked for (n, at least 1).
  OpenAiApiReply(OpenAiReply reply, OpenAiEndpoint endpoint, bool logprobs, int32_t choices = 1);

  std::string Complete(const CollectedReply& reply) override;
  std::string CompleteChoices(const std::vector<CollectedReply>& choices) override;
  // A message whose choice_index is outside the choices becomes no event.
  std::vector<std::string> Events(const v1::GenerateResponse& message) override;
  std::string StreamEnd() override;
  std::string StreamError(const HttpError& error) override;
  std::string ErrorBody(const HttpError& error) const override;
  // With the request: a coordinator error about one of its fields names the body's field
  // (openai_error_param.h).
  absl::Status ForClient(absl::Status status) const override;
  void set_request(OpenAiRequest request) { request_ = std::move(request); }

 private:
  // A streamed choice's state.
  struct StreamedChoice {
    bool role_sent = false;
    std::optional<OpenAiLogprobs> logprobs;  // when asked for: its text offset runs on
  };
  // The choice's logprobs in OpenAI's shape; null when the request did not ask for them.
  json::Value Logprobs(const CollectedReply& choice) const;

  std::optional<OpenAiRequest> request_;
  OpenAiReply reply_;
  OpenAiEndpoint endpoint_;
  bool logprobs_;
  std::vector<StreamedChoice> streamed_;  // one per choice
  int32_t finished_ = 0;                  // streamed choices that sent their final
  v1::GenerationResult first_;            // choice 0's final, once it came
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_
