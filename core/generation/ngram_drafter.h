// A drafter that needs no model (prompt-lookup decoding): it proposes, as the next tokens, what
// followed the earlier occurrence that matches the longest suffix of the session's own history
// (prompt and output), the most recent of equals. Text that quotes or edits what came before is
// guessed well; anything else gets no guesses. Each guess is offered with q = 1 (one-hot), so
// the standard acceptance rule keeps the output exactly the target's: greedy output never
// changes.
//
// The draft length follows the match: a match of m tokens earns up to m / 2 + 1 guesses (2 for
// the shortest, 16 from 30 on). A long match is likely to go on, a short one soon diverges, and
// every guess costs the target a verify row (on stories260K's repetitive prompts this beat a
// fixed k of 4 and of 16: tools/bench/ngram_bench.py).
#ifndef TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_
#define TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tandem {

struct NgramOptions {
  int32_t min_match = 2;   // the shortest suffix match that earns guesses
  int32_t max_match = 64;  // a match is measured up to this many tokens
};

// Up to min(k, m / 2 + 1) tokens that followed the latest earlier occurrence of the longest
// suffix of `history` (m tokens, at most max_match), fewer where the history ends; empty when
// no suffix of at least min_match tokens occurred before.
std::vector<int32_t> NgramGuesses(absl::Span<const int32_t> history, int32_t k,
                                  const NgramOptions& options = NgramOptions());

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_
