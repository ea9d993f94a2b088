// How many guesses the next round asks for: the one place where k adapts. The round driver
// asks Next() before each round and reports each round to Observe(). Two policies: a fixed
// k, FixedDraftLength here, and the cost model of adaptive k, DraftCostModel
// (draft_cost_model.h: drafted, accepted and the calls' times in, the k that maximises
// tokens per second out).
//
// Thread-safety: driven by one round driver at a time.
#ifndef TANDEM_CORE_GENERATION_DRAFT_LENGTH_POLICY_H_
#define TANDEM_CORE_GENERATION_DRAFT_LENGTH_POLICY_H_

#include <cstdint>

namespace tandem {

struct SpeculationStats;  // generation_result.h

// One round as the policy sees it.
struct RoundReport {
  int32_t asked = 0;          // the k the round asked the draft for (after the limits' clamp)
  int32_t drafted = 0;        // guesses the draft proposed and the target tested
  int32_t accepted = 0;       // of those, kept
  int32_t yielded = 0;        // tokens the round produced (kept guesses, next token, continued)
  double draft_seconds = 0;   // wall clock of the draft call (0 without one)
  double verify_seconds = 0;  // wall clock of the verify call
  // The backends' own compute in those calls (Proposal/Verdict::compute_seconds: a worker's
  // reply's, or in-process the steady clock's; 0 where not measured). Wall minus compute
  // is what a call costs beyond its work: the round trip.
  double draft_compute_seconds = 0;
  double verify_compute_seconds = 0;
  // Wall clock from the end of the round before (or the decode's start) to this one's end:
  // its calls, and what the caller did between rounds (streaming the tokens out).
  double round_seconds = 0;
  // Pipelined rounds: every guess was kept, so the target's next token tested the draft's
  // stand-in for it (the guess at position `drafted`), and whether the two were equal.
  bool standin_tested = false;
  bool standin_kept = false;
  // Forced tokens (round_driver.h): guesses the output's constraint forced, tested before the
  // draft's (and not counted in drafted and accepted), and of those, kept.
  int32_t forced = 0;
  int32_t forced_accepted = 0;
  // Predicted guesses (RoundDriverOptions::prediction): tested after the forced ones, in a
  // round without the draft's, and of those, kept.
  int32_t predicted = 0;
  int32_t predicted_accepted = 0;
};

class DraftLengthPolicy {
 public:
  virtual ~DraftLengthPolicy() = default;
  // The k the next round asks for, >= 0 (0: no speculation); the driver lowers it to what the
  // request's limits can use.
  virtual int32_t Next() const = 0;
  virtual void Observe(const RoundReport& round) = 0;
  // What the policy adds to a call's statistics when the call ends (nothing by default).
  virtual void Report(SpeculationStats& /*stats*/) const {}
};

// A fixed k (speculation.adaptive off): rounds teach it nothing.
class FixedDraftLength : public DraftLengthPolicy {
 public:
  explicit FixedDraftLength(int32_t k) : k_(k) {}
  int32_t Next() const override { return k_; }
  void Observe(const RoundReport& /*round*/) override {}

 private:
  int32_t k_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_DRAFT_LENGTH_POLICY_H_
