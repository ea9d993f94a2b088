// The n-gram drafter (ngram_drafter.h) as a round driver's DraftBackend: guesses from the
// session's own history, each offered with a one-hot q (q(g) = 1), so the acceptance rule
// keeps the output exactly the target's. It has no cache: Prefill does nothing. Constrained
// (output_constraint.h), its guesses are cut at the first token the constraint refuses. Its
// calls run on the round driver's thread, so it may share the driver's constraint object
// (RoundDriverOptions::forced_tokens): each syncs it by content before use.
//
// Thread-safety: calls run at once and return a ready future; one driver at a time.
#ifndef TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_
#define TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_

#include <cstdint>
#include <vector>

#include "core/generation/ngram_drafter.h"
#include "core/generation/output_constraint.h"
#include "core/generation/round_backends.h"

namespace tandem {

class NgramDraft : public DraftBackend {
 public:
  explicit NgramDraft(const NgramOptions& options = NgramOptions(),
                      const OutputConstraint& constrained = {})
      : options_(options), constrained_(constrained) {}

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) override;
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override;

 private:
  NgramOptions options_;
  OutputConstraint constrained_;
  std::vector<int32_t> walked_;  // AcceptedGuesses' scratch
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_
