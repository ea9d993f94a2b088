// How many of a prediction's tokens (prediction_drafter.h) a round tests: k for predicted
// guesses, chosen by the same reasoning as the draft's cost model (draft_cost_model.h) with
// the costs a prediction has: no draft call, only the verify's rows.
//
// Per request it keeps decayed estimates of
//   a     the chance that a predicted guess is kept given the ones before it were (a run of
//         kept guesses ends at an edit: kept / (kept + runs cut short), a prior of
//         prior_acceptance worth one round);
//   c(k)  a round's wall seconds with k predicted guesses: base + row k, a line fitted through
//         the rounds seen (their k varies with the room and the alignment), with row =
//         row_cost x base until evidence_rounds rounds with k spread enough fit it, and at
//         most 80 % of a mean round (noise must not make a round without guesses look free);
// and chooses the k in [1, max_tokens] that maximises E(k) / c(k), E(k) = 1 + a + ... + a^k,
// or, after evidence_rounds rounds, 0 when even that is not a `margin` better than one token
// per c(0) (an unrelated prediction: the round then goes to the draft, or the target alone).
// After
// probe_after_rounds rounds sat out (SatOut), one round tests probe_tokens guesses again.
//
// Thread-safety: not thread-safe; one per request, on the round driver's thread.
#ifndef TANDEM_CORE_GENERATION_PREDICTION_LENGTH_POLICY_H_
#define TANDEM_CORE_GENERATION_PREDICTION_LENGTH_POLICY_H_

#include <cstdint>

#include "core/generation/draft_length_policy.h"

namespace tandem {

struct PredictionLengthOptions {
  int32_t max_tokens = 32;  // within the worker's guesses per verify
  int32_t initial_tokens = 8;
  double acceptance_decay = 0.9;  // per round
  double prior_acceptance = 0.8;
  double timing_decay = 0.8;
  double row_cost = 0.05;  // a verify row's seconds as a share of a round's, until fitted
  double margin = 0.02;
  // Rounds observed before the line is fitted and before the policy may sit rounds out: the
  // first rounds are few and noisy (a first guess lost to a tokenization seam, a slow call).
  int32_t evidence_rounds = 4;
  int32_t probe_after_rounds = 16;
  int32_t probe_tokens = 2;
  int32_t fixed_tokens = 0;  // > 0: every round tests this many, whatever the rounds show
};

class PredictionLengthPolicy : public DraftLengthPolicy {
 public:
  explicit PredictionLengthPolicy(const PredictionLengthOptions& options = {});

  // The predicted guesses the next round should test; 0: sit it out.
  int32_t Next() const override { return k_; }
  // A round that tested predicted guesses (round.predicted, round.predicted_accepted).
  void Observe(const RoundReport& round) override;
  // A round the prediction had guesses for but sat out (Next() was 0).
  void SatOut();

  double acceptance() const;  // a
  // c(k) = base + row k, in seconds; zero before any round.
  double RoundSeconds(int32_t k) const;

 private:
  void Choose();

  PredictionLengthOptions options_;
  int32_t k_;
  int32_t sat_out_ = 0;
  int64_t rounds_ = 0;
  // Decayed sums: kept guesses, runs cut short; and (k, seconds) for the fit.
  double kept_ = 0, cut_ = 0;
  double weight_ = 0, sum_k_ = 0, sum_s_ = 0, sum_kk_ = 0, sum_ks_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_PREDICTION_LENGTH_POLICY_H_
