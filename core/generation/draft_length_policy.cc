#include "core/generation/draft_length_policy.h"

#include <algorithm>

namespace tandem {

void StepDraftLength::Observe(const RoundReport& round) {
  if (!adaptive_ || round.drafted == 0 || round.drafted < k_) return;
  if (round.accepted == round.drafted) {
    k_ = std::min(k_ + 1, max_k_);
  } else if (2 * round.accepted < round.drafted) {
    k_ = std::max(k_ - 1, 1);
  }
}

}  // namespace tandem
