// The OpenAI chat and text completion APIs as an ApiReply (api_reply.h): the JSON and SSE
// chunks of openai_response.h and openai_logprobs.h, framed as OpenAI frames them ("data:
// {chunk}" events, a chat stream opening with the role, the usage chunk with include_usage,
// "data: [DONE]" at the end, an error as "data: {"error": ...}").
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_

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
  // `logprobs`: the request asked for them.
  OpenAiApiReply(OpenAiReply reply, OpenAiEndpoint endpoint, bool logprobs);

  std::string Complete(const CollectedReply& reply) override;
  std::vector<std::string> Events(const v1::GenerateResponse& message) override;
  std::string StreamEnd() override;
  std::string StreamError(const HttpError& error) override;
  std::string ErrorBody(const HttpError& error) const override;
  // With the request: a coordinator error about one of its fields names the body's field
  // (openai_error_param.h).
  absl::Status ForClient(absl::Status status) const override;
  void set_request(OpenAiRequest request) { request_ = std::move(request); }

 private:
  std::optional<OpenAiRequest> request_;
  OpenAiReply reply_;
  std::optional<OpenAiLogprobs> logprobs_;  // when the request asked for them
  bool role_sent_ = false;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_API_REPLY_H_
