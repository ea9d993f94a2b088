// The choices of an OpenAI reply (`n`, issue #30) from Generate's messages, each tagged with
// its choice_index (generator.proto): OpenAiChoices collects a reply that is not streamed
// into its "choices" array (each with its index, message or text, finish_reason and
// logprobs), OpenAiStreamEvents turns each message of a streamed one into its chunks (a chat
// choice opens with its role; chunks of different choices interleave, as OpenAI's do; after
// the last choice's finish, with include_usage, the usage chunk). Usage counts the prompt
// once and the completion tokens of every choice (GenerationResult.request_usage).
//
// Also: CheckOpenAiChoices, the coordinator's check of `n` with `n` as the error's param.
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_CHOICES_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_CHOICES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "services/coordinator/openai_logprobs.h"
#include "services/coordinator/openai_response.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// `status` (CheckChoices' refusal of GenerateRequest.n) with `n` as its error.param.
absl::Status OpenAiChoicesParam(const absl::Status& status);

class OpenAiChoices {
 public:
  // `n`: the choices the request asked for (>= 1); `logprobs`: whether it asked for them.
  OpenAiChoices(OpenAiEndpoint endpoint, int32_t n, bool logprobs);

  // One message of Generate; a choice_index outside [0, n) is ignored.
  void Add(const v1::GenerateResponse& message);
  // The whole reply's body.
  std::string Reply(const OpenAiReply& reply) const;

 private:
  struct Choice {
    std::string text;
    std::string reasoning;
    google::protobuf::RepeatedPtrField<v1::TokenLogprobs> logprobs;
    v1::GenerationResult result;
  };
  OpenAiEndpoint endpoint_;
  bool logprobs_;
  std::vector<Choice> choices_;
  v1::GenerationResult usage_;  // the final that carries the request's usage
};

class OpenAiStreamEvents {
 public:
  // `reply` must outlive this.
  OpenAiStreamEvents(const OpenAiReply& reply, int32_t n, bool logprobs);

  // The chunks (JSON texts, without SSE framing) one message of Generate becomes.
  std::vector<std::string> Of(const v1::GenerateResponse& message);

 private:
  struct Choice {
    bool role_sent = false;
    std::optional<OpenAiLogprobs> logprobs;  // when asked for: its text offset runs on
  };
  const OpenAiReply& reply_;
  std::vector<Choice> choices_;
  int32_t finished_ = 0;
  v1::GenerationResult first_;  // choice 0's final, once it came
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_CHOICES_H_
