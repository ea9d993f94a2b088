#include "core/generation/ngram_draft_backend.h"

namespace tandem {

std::future<absl::Status> NgramDraft::Prefill(absl::Span<const int32_t>, int64_t) {
  return ReadyFuture(absl::OkStatus());
}

std::future<absl::Status> NgramDraft::Draft(absl::Span<const int32_t> sequence, int32_t k,
                                            Proposal* out) {
  out->tokens = NgramGuesses(sequence, k, options_);
  out->tokens.resize(AcceptedGuesses(constrained_, sequence, out->tokens, &walked_));
  if (out->q.size() < out->tokens.size()) out->q.resize(out->tokens.size());
  for (size_t i = 0; i < out->tokens.size(); ++i) {
    out->q[i].ids.assign(1, out->tokens[i]);
    out->q[i].probabilities.assign(1, 1.0f);
  }
  return ReadyFuture(absl::OkStatus());
}

}  // namespace tandem
