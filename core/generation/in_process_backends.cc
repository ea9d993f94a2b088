#include "core/generation/in_process_backends.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/status/statusor.h"

namespace tandem {
namespace {

// The clock of the calls' compute: steady_clock reads in ~25 ns (vDSO), where the thread's CPU
// clock is a system call of ~0.6 us, four a round: a few per cent of a tiny model's step.
// Both halves run on this thread, so the wall time of a call is its compute but for
// preemption, which the cost model's cap on outliers absorbs.
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::future<absl::Status> InProcessDraft::Prefill(absl::Span<const int32_t> sequence, int64_t end) {
  ToDraftVocabulary(sequence.first(end), sampler_.vocab_size(), &input_);
  return ReadyFuture(RunTokens(decoder_, state_, input_, end, LogitsMode::kLast).status());
}

std::future<absl::Status> InProcessDraft::Draft(absl::Span<const int32_t> sequence, int32_t k,
                                                Proposal* out) {
  const double start = timed_ ? Now() : 0;
  absl::Status drafted = DraftGuesses(decoder_, state_, sampler_, sequence, k, seed_, &out->tokens,
                                      &out->q, constrained_);
  out->compute_seconds = timed_ ? Now() - start : 0;
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
  const double start = timed_ ? Now() : 0;
  absl::StatusOr<AcceptanceResult> verdict =
      VerifyGuesses(decoder_, state_, sampler_, call.sequence, &proposal.tokens, proposal.q, seed_,
                    scratch_, constrained_);
  out->continued.clear();
  absl::Status status = verdict.status();
  if (verdict.ok()) {
    out->accepted = verdict->accepted;
    out->next_token = verdict->next_token;
    const int32_t more = proposal.tokens.empty()
                             ? std::min(call.continue_limit, SpeculationDefaults::kContinueTokens)
                             : 0;
    if (more > 0) {
      status = ContinueAlone(decoder_, state_, sampler_, verdict->next_token, more, seed_, scratch_,
                             &out->continued, constrained_);
    }
  }
  out->compute_seconds = timed_ ? Now() - start : 0;
  return ReadyFuture(std::move(status));
}

}  // namespace tandem
