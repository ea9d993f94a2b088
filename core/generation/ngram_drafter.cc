#include "core/generation/ngram_drafter.h"

#include <algorithm>

namespace tandem {
namespace {

// How many tokens before `end` equal the last ones of `history` (at most `cap`, and never
// reaching before the start).
int64_t MatchBefore(absl::Span<const int32_t> history, int64_t end, int64_t cap) {
  const int64_t last = static_cast<int64_t>(history.size()) - 1;
  int64_t m = 0;
  while (m < cap && m < end && history[end - 1 - m] == history[last - m]) ++m;
  return m;
}

}  // namespace

std::vector<int32_t> NgramGuesses(absl::Span<const int32_t> history, int32_t k,
                                  const NgramOptions& options) {
  const int64_t len = static_cast<int64_t>(history.size());
  if (k <= 0 || len < 2) return {};
  const int64_t cap = std::max(options.max_match, 1);
  // An occurrence ending at `end` is followed by history[end]; the latest first, so a later
  // one wins only with a longer match.
  int64_t best = 0, best_end = 0;
  for (int64_t end = len - 1; end >= 1 && best < cap; --end) {
    const int64_t m = MatchBefore(history, end, cap);
    if (m > best) {
      best = m;
      best_end = end;
    }
  }
  if (best < std::max(options.min_match, 1)) return {};
  const int64_t count = std::min<int64_t>({k, best / 2 + 1, len - best_end});
  return std::vector<int32_t>(history.begin() + best_end, history.begin() + best_end + count);
}

}  // namespace tandem
