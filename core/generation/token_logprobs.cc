#include "core/generation/token_logprobs.h"

#include <algorithm>
#include <cmath>

namespace tandem {

TokenLogprobs LogprobsOf(absl::Span<const float> logits, int32_t token, int32_t top_n) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  // log softmax(x)_i = x_i - max - log(sum_j exp(x_j - max)): subtracting the max keeps every
  // exp in (0, 1], and summing in double keeps the sum exact enough for float results.
  float max = -INFINITY;
  for (float x : logits) max = std::max(max, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double log_norm = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits[id]) - log_norm);
  };
  TokenLogprobs out;
  out.chosen = {token, logprob(token)};
  const int64_t n = std::clamp<int64_t>(top_n, 0, vocab);
  if (n == 0) return out;
  std::vector<int32_t> ids(vocab);
  for (int64_t i = 0; i < vocab; ++i) ids[i] = static_cast<int32_t>(i);
  const auto more_likely = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), more_likely);
  out.top.reserve(n);
  for (int64_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i])});
  return out;
}

}  // namespace tandem
