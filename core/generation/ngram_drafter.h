// A drafter that needs no model (prompt-lookup decoding): it proposes, as the next tokens, what
// followed the most recent earlier occurrence of the longest suffix of the session's own
// history (prompt and output). Text that quotes or edits what came before is guessed well;
// anything else gets no guesses. Each guess is offered with q = 1 (one-hot), so the standard
// acceptance rule keeps the output exactly the target's: greedy output never changes.
#ifndef TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_
#define TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tandem {

struct NgramOptions {
  int32_t min_match = 2;  // shortest suffix that may match
  int32_t max_match = 4;  // longest suffix tried first
};

// Up to `k` tokens that followed the most recent earlier occurrence of the longest suffix of
// `history` of max_match .. min_match tokens (fewer where the history ends); empty when no
// suffix of at least min_match tokens occurred before.
std::vector<int32_t> NgramGuesses(absl::Span<const int32_t> history, int32_t k,
                                  const NgramOptions& options = NgramOptions());

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_NGRAM_DRAFTER_H_
