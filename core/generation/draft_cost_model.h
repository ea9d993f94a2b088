// Chooses k, the guesses per speculative round, to maximise expected tokens per second: the
// DraftLengthPolicy (draft_length_policy.h) of adaptive k, in-process and in the coordinator.
//
//   DraftCostModel model(options, /*initial_k=*/4);
//   RoundDriver driver(target, &draft, nullptr, model);  // Next() before, Observe() after each
//                                                         // round; Report() adds Estimates()
//
// Per session it keeps decayed estimates of
//   a_i  the acceptance at position i: P(guess i kept | guesses 0..i-1 kept) (a pipelined
//        round whose k guesses were all kept also tests its stand-in, position k);
//   d    the draft's compute per guess, plus a per-call overhead (round trip, sampling);
//   v(r) the target's verify compute for r rows (pending + guesses), a line fitted through
//        the decayed mean at each row count seen, plus a per-call overhead;
//   t0   the target alone's seconds per token (rounds without guesses);
//   g    a round's wall time beyond its calls (the caller's work between rounds, streaming
//        the tokens out: remote, a round trip's worth), from rounds without guesses, whose t0
//        then counts it too; 0 with compute_only.
// The rounds' times come from RoundReport: wall seconds of each call (the driver's clock) and
// the backends' compute seconds (the workers' replies; in-process the steady clock's).
// With E(k) = 1 + a_0 + a_0 a_1 + ... + a_0..a_{k-1} (the tokens a round yields),
//   sequential: rate(k) = E(k) / (D(k) + V(k) + g),  D(k) = overhead_d + k d,
//               V(k) = v(k+1) + overhead_v;
//   pipelined (the draft guesses the next round while the target verifies; its guesses are
//   used when all k are kept and the target's bonus token equals the draft's stand-in, with
//   probability h = a_0..a_k; each draft call asks k + 1, the last the stand-in; the driver
//   waits for the call that ran during the verify, and a round after a miss drafts first):
//   rate(k) = E(k) / (max(D(k+1), V(k)) + (1 - h) D(k+1) + g);
// and rate(0) = 1 / t0. The model does not choose k = 0 before `evidence_rounds` rounds had
// guesses unless their acceptance is below a half or no acceptance could pay, nor, while it
// guesses, unless rate(0) beats the best rate(k) by alone_margin. k = 0 stops the
// acceptance estimates, so after `probe_after_rounds` rounds at k = 0 (doubling, up to 8 times,
// while probes find k = 0 best) two rounds re-measure them with the best k > 0 (the first also
// catches the draft up on the tokens it missed, so its time does not count towards d); while
// GuessingCanPay says no acceptance could make guessing pay at the timings measured, only probes 8
// intervals apart run. With compute_only a probe's catch-up costs up to d / t0 of the time since
// the last one, however far apart: a probe runs only while all kept would gain more than that, and
// once after the model last chose k > 0. Likewise every `remeasure_alone_after_rounds` rounds with
// guesses one runs the target alone. The first round uses the caller's k, the second runs the
// target alone (to measure t0 and v(1)), then the model chooses.
//
// Thread-safety: not thread-safe; one per session, on the session's thread.
#ifndef TANDEM_CORE_GENERATION_DRAFT_COST_MODEL_H_
#define TANDEM_CORE_GENERATION_DRAFT_COST_MODEL_H_

#include <cstdint>
#include <vector>

#include "core/generation/draft_length_policy.h"
#include "core/generation/speculation_defaults.h"

namespace tandem {

// The calling thread's CPU time in seconds: a round the OS preempted costs what it computed,
// not how long it waited. A read is a system call (~0.6 us): the in-process backends time
// their calls with the steady clock instead (~25 ns), four reads a round.
double ThreadCpuSeconds();

struct DraftCostOptions {
  int32_t max_draft_tokens = SpeculationLimits::kMaxDraftTokens;
  bool pipelined = false;  // choose k with the pipelined formula
  // The weight an estimate keeps at each new observation (acceptance; timings).
  double acceptance_decay = 0.9;
  double timing_decay = 0.8;
  double prior_acceptance = 0.5;  // worth one observation, before any
  int32_t probe_after_rounds = 32;
  // Rounds with guesses before the model may settle on the target alone, while the
  // acceptance seen so far is at least a half and all kept would pay: one round's evidence
  // (the prior still weighs in it) makes a draft that keeps 96 % look like one that keeps 76 %.
  int32_t evidence_rounds = 4;
  // While guessing, the share by which the target alone must be predicted faster than the
  // best k before the model stops: the estimates are noisy (one refused guess moves a_0 from
  // 0.96 to 0.80 after a few rounds), and k = 0 waits probe_after_rounds for the next probe.
  double alone_margin = 0.05;
  // Rounds with guesses before one runs the target alone again (t0 and v(1) drift: other
  // processes, a growing context).
  int32_t remeasure_alone_after_rounds = 16;
  // Both halves run on the caller's thread (in-process): a call's wall time beyond its compute
  // is the OS preempting the thread, not a cost, so rounds are costed by compute seconds alone.
  bool compute_only = false;
};

// The model's estimates (in the statistics). Zero where nothing was measured yet.
struct DraftCostEstimates {
  std::vector<double> acceptance;     // [i]: a_i
  double draft_token_seconds = 0;     // d
  double draft_overhead_seconds = 0;  // per draft call, beyond its compute
  double verify_base_seconds = 0;     // v(r) = base + row * r
  double verify_row_seconds = 0;
  double verify_overhead_seconds = 0;  // per verify call beyond its compute
  double alone_token_seconds = 0;      // t0
  double round_overhead_seconds = 0;   // g: per round beyond its calls
  int32_t chosen_k = 0;
  double predicted_tokens_per_second = 0;  // at chosen_k
  double predicted_alone_tokens_per_second = 0;
};

// The formulas above over given estimates (alone_token_seconds = 0: v(1) + overhead).
double ExpectedRoundTokens(const DraftCostEstimates& e, int32_t k);
double SequentialTokensPerSecond(const DraftCostEstimates& e, int32_t k);
double PipelinedTokensPerSecond(const DraftCostEstimates& e, int32_t k);
// The one of the two for the mode.
double TokensPerSecond(const DraftCostEstimates& e, int32_t k, bool pipelined);
// The k in [min_k, max_k] with the highest rate (the smallest of equals).
int32_t BestDraftTokens(const DraftCostEstimates& e, int32_t min_k, int32_t max_k, bool pipelined);
// Whether some k in [1, max_k] would beat the target alone by more than `margin` (a share of
// its rate) if every guess were kept: if not, no acceptance can make guessing pay that much at
// these timings.
bool GuessingCanPay(const DraftCostEstimates& e, int32_t max_k, bool pipelined, double margin = 0);

class DraftCostModel : public DraftLengthPolicy {
 public:
  // initial_k is clamped to [1, max_draft_tokens].
  DraftCostModel(const DraftCostOptions& options, int32_t initial_k);

  // The guesses the next round should ask for; 0 means the target alone.
  int32_t Next() const override { return k_; }
  // Updates the estimates with a finished round and chooses the next k.
  void Observe(const RoundReport& round) override;
  // Sets stats.cost_model to Estimates().
  void Report(SpeculationStats& stats) const override;
  DraftCostEstimates Estimates() const;

 private:
  // A decayed mean: sum and weight both shrink by the decay at each observation.
  struct Mean {
    double sum = 0, weight = 0;
    void Add(double x, double decay) {
      sum = decay * sum + x;
      weight = decay * weight + 1;
    }
    // A time more than twice the estimate is counted as twice it: a round the OS preempted
    // (tens of ms on a busy machine) would otherwise swamp many rounds' estimates, while a
    // real slow-down still doubles the estimate within a few rounds.
    void AddTime(double seconds, double decay) {
      const double cap = 2 * value();
      Add(known() && cap > 0 && seconds > cap ? cap : seconds, decay);
    }
    bool known() const { return weight > 0; }
    double value() const { return weight > 0 ? sum / weight : 0; }
  };
  void RecordAcceptance(int32_t drafted, int32_t accepted);
  void FitVerify(DraftCostEstimates& e) const;
  int32_t Choose(const DraftCostEstimates& e);
  // Whether the probe now due runs (and the next one's interval).
  bool ProbeWorthwhile(const DraftCostEstimates& e, int32_t max_k);
  // Whether to go on guessing at `rate` (the best k > 0's) although the target alone's
  // `alone` is higher: too few rounds had guesses to rule them out, or guesses are running
  // and alone is not clearly faster.
  bool KeepGuessing(const DraftCostEstimates& e, int32_t max_k, double rate, double alone) const;

  DraftCostOptions options_;
  int32_t probe_interval_;  // rounds at k = 0 before the next probe
  int32_t k_;
  int64_t rounds_ = 0;
  int32_t rounds_alone_ = 0;    // consecutive rounds the model chose k = 0
  int32_t rounds_guessed_ = 0;  // consecutive rounds the model chose k > 0
  int32_t probes_left_ = 0;     // rounds of a probe still to run
  int32_t probes_in_vain_ = 0;  // probes since the model last chose k > 0
  int64_t rounds_with_guesses_ = 0;
  bool speculating_ = false;    // the model last chose k > 0 (not counting re-measures)
  int32_t last_drafted_ = 0;    // the previous round's guesses
  int32_t drafted_before_ = 0;  // and the one's before it
  std::vector<Mean> acceptance_;
  std::vector<Mean> verify_by_rows_;  // [r - 1]: compute of a verify of r rows
  Mean draft_token_, draft_overhead_, verify_overhead_, alone_token_, round_overhead_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_DRAFT_COST_MODEL_H_
