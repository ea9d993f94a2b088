// The round driver's backends over models in this process: the two halves of
// speculative_round.h (DraftGuesses, VerifyGuesses) on a decoder, its cache and its sampler.
// Every call runs at once on the caller's thread and returns a ready future. When `timed`,
// Draft and Verify report the steady clock's time of their work (Proposal/Verdict::
// compute_seconds) for the cost model of k; a clock read costs about 25 ns.
//
// Thread-safety: not thread-safe; the decoder, state and sampler must outlive the backend and
// be used by nothing else meanwhile.
#ifndef TANDEM_CORE_GENERATION_IN_PROCESS_BACKENDS_H_
#define TANDEM_CORE_GENERATION_IN_PROCESS_BACKENDS_H_

#include <cstdint>
#include <vector>

#include "core/decoder/decoder.h"
#include "core/generation/output_constraint.h"
#include "core/generation/round_backends.h"
#include "core/generation/sampler.h"
#include "core/generation/speculation_defaults.h"
#include "core/generation/speculative_round.h"

namespace tandem {

class InProcessDraft : public DraftBackend {
 public:
  // Draws keyed by `seed`. Target ids outside the draft's vocabulary run as kDraftStandIn.
  // `constrained`: the draft's own constraint object (DraftGuesses).
  InProcessDraft(ForwardRunner& decoder, ModelState& state, Sampler& sampler, uint64_t seed,
                 bool timed = false, const OutputConstraint& constrained = {})
      : decoder_(decoder),
        state_(state),
        sampler_(sampler),
        seed_(seed),
        timed_(timed),
        constrained_(constrained) {}

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) override;
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override;

 private:
  ForwardRunner& decoder_;
  ModelState& state_;
  Sampler& sampler_;
  uint64_t seed_;
  bool timed_;
  OutputConstraint constrained_;
  std::vector<int32_t> input_;  // the prefill in the draft's vocabulary
};

class InProcessTarget : public TargetBackend {
 public:
  // Draws keyed by `seed`; `scratch` holds the verify pass's buffers. `constrained`: the
  // target's own constraint object (VerifyGuesses, ContinueAlone).
  InProcessTarget(ForwardRunner& decoder, ModelState& state, Sampler& sampler, uint64_t seed,
                  VerifyScratch* scratch, bool timed = false,
                  const OutputConstraint& constrained = {})
      : decoder_(decoder),
        state_(state),
        sampler_(sampler),
        seed_(seed),
        scratch_(scratch),
        timed_(timed),
        constrained_(constrained) {}

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                    int64_t* reused) override;
  // Without guesses, continues alone for up to SpeculationDefaults::kContinueTokens
  // (call.continue_limit; ContinueAlone: the tokens one-token rounds would draw), so the
  // round's own work is shared by several tokens of the target alone.
  std::future<absl::Status> Verify(const VerifyCall& call, Verdict* out) override;

 private:
  ForwardRunner& decoder_;
  ModelState& state_;
  Sampler& sampler_;
  uint64_t seed_;
  VerifyScratch* scratch_;
  bool timed_;
  OutputConstraint constrained_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_IN_PROCESS_BACKENDS_H_
