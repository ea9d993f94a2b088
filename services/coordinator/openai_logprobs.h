// The "logprobs" value of an OpenAI choice, from the target's per-token logprobs that
// Generate's deltas carry (TokenDelta.logprobs; generator.proto says which distribution):
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token",
//                "logprob", "bytes"}]}], "refusal": null}
//   completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token:
//                logprob}], "text_offset": [...]}
// A token's "token" is its bytes as UTF-8 (an incomplete character becomes U+FFFD; "bytes"
// stays exact). text_offset counts Unicode code points of the tokens before it in the
// completion (not the prompt: echo is refused), as the tokens' own bytes spell them.
//
// Not thread-safe: one per request (the offset runs on across a stream's chunks).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_LOGPROBS_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_LOGPROBS_H_

#include <cstdint>

#include "core/base/json.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "services/coordinator/openai_request.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

class OpenAiLogprobs {
 public:
  explicit OpenAiLogprobs(OpenAiEndpoint endpoint) : endpoint_(endpoint) {}

  // The value for these tokens (the next ones of the reply).
  json::Value Of(const google::protobuf::RepeatedPtrField<v1::TokenLogprobs>& tokens);

 private:
  json::Value Chat(const google::protobuf::RepeatedPtrField<v1::TokenLogprobs>& tokens) const;
  json::Value Completion(const google::protobuf::RepeatedPtrField<v1::TokenLogprobs>& tokens);

  OpenAiEndpoint endpoint_;
  int64_t text_offset_ = 0;  // code points of the completion's tokens so far
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_LOGPROBS_H_
