// The log-probabilities OpenAI-style clients ask for (`logprobs`, `top_logprobs`): of one
// token under a logits row, and the row's most likely tokens.
//
// The distribution is the softmax of the RAW logits (temperature 1, no penalty, no top-k/p or
// min-p filter): the model's own probabilities, as vLLM's default "raw" logprobs are. They do
// not change with the request's sampling settings, and since a row's logits are
// bit-identical alone or in a verify batch (batch invariance), not with speculation either.
//
// Thread-compatible plain functions.
#ifndef TANDEM_CORE_GENERATION_TOKEN_LOGPROBS_H_
#define TANDEM_CORE_GENERATION_TOKEN_LOGPROBS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tandem {

// Most alternatives a request may ask for per position (OpenAI's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;  // natural log, <= 0
};

struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first; equal logits: lower id first
};

// log softmax(logits)[token] and the `top_n` most likely tokens of `logits` ([vocab]).
// `token` must be in [0, logits.size()); top_n is clamped to [0, logits.size()].
TokenLogprobs LogprobsOf(absl::Span<const float> logits, int32_t token, int32_t top_n);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_TOKEN_LOGPROBS_H_
