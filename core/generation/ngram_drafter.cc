#include "core/generation/ngram_drafter.h"

#include <algorithm>

namespace tandem {
namespace {

// Whether history[start, start + n) equals the last n tokens.
bool MatchesSuffix(absl::Span<const int32_t> history, int64_t start, int64_t n) {
  const int64_t suffix = static_cast<int64_t>(history.size()) - n;
  for (int64_t i = 0; i < n; ++i) {
    if (history[start + i] != history[suffix + i]) return false;
  }
  return true;
}

}  // namespace

std::vector<int32_t> NgramGuesses(absl::Span<const int32_t> history, int32_t k,
                                  const NgramOptions& options) {
  const int64_t len = static_cast<int64_t>(history.size());
  const int64_t longest = std::min<int64_t>(options.max_match, len - 1);
  for (int64_t n = longest; n >= std::max(options.min_match, 1) && k > 0; --n) {
    // Most recent first: an occurrence starting at `start` < len - n, followed by a token.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!MatchesSuffix(history, start, n)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(k, len - from);
      return std::vector<int32_t>(history.begin() + from, history.begin() + from + count);
    }
  }
  return {};
}

}  // namespace tandem
