// The n-gram drafter (ngram_drafter.h) as a round driver's DraftBackend: guesses from the
// session's own history, each offered with a one-hot q (q(g) = 1), so the acceptance rule
// keeps the output exactly the target's. It has no cache: Prefill does nothing.
//
// Thread-safety: stateless; calls run at once and return a ready future.
#ifndef TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_
#define TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_

#include "core/generation/ngram_drafter.h"
#include "core/generation/round_backends.h"

namespace tandem {

class NgramDraft : public DraftBackend {
 public:
  explicit NgramDraft(const NgramOptions& options = NgramOptions()) : options_(options) {}

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) override;
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override;

 private:
  NgramOptions options_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_NGRAM_DRAFT_BACKEND_H_
