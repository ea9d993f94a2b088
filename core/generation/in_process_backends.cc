#include "core/generation/in_process_backends.h"

#include <utility>

#include "absl/status/statusor.h"
#include "core/generation/draft_cost_model.h"

namespace tandem {

std::future<absl::Status> InProcessDraft::Prefill(absl::Span<const int32_t> sequence, int64_t end) {
  ToDraftVocabulary(sequence.first(end), sampler_.vocab_size(), &input_);
  return ReadyFuture(RunTokens(decoder_, state_, input_, end, LogitsMode::kLast).status());
}

std::future<absl::Status> InProcessDraft::Draft(absl::Span<const int32_t> sequence, int32_t k,
                                                Proposal* out) {
  const double start = timed_ ? ThreadCpuSeconds() : 0;
  absl::Status drafted =
      DraftGuesses(decoder_, state_, sampler_, sequence, k, seed_, &out->tokens, &out->q);
  out->compute_seconds = timed_ ? ThreadCpuSeconds() - start : 0;
  return ReadyFuture(std::move(drafted));
}

std::future<absl::Status> InProcessTarget::Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                                   int64_t* reused) {
  absl::StatusOr<RunOutput> run =
      RunTokens(decoder_, state_, sequence.first(end), end, LogitsMode::kLast);
  if (run.ok()) *reused = run->reused;
  return ReadyFuture(run.status());
}

std::future<absl::Status> InProcessTarget::Verify(const VerifyCall& call, Verdict* out) {
  Proposal& proposal = *call.proposal;
  const double start = timed_ ? ThreadCpuSeconds() : 0;
  absl::StatusOr<AcceptanceResult> verdict = VerifyGuesses(
      decoder_, state_, sampler_, call.sequence, &proposal.tokens, proposal.q, seed_, scratch_);
  out->compute_seconds = timed_ ? ThreadCpuSeconds() - start : 0;
  if (verdict.ok()) {
    out->accepted = verdict->accepted;
    out->next_token = verdict->next_token;
    out->continued.clear();
  }
  return ReadyFuture(verdict.status());
}

}  // namespace tandem
