// The one loop of speculative decoding (docs/architecture.md), over a DraftBackend and a
// TargetBackend (round_backends.h), shared by SpeculativeSession (in-process backends) and
// the coordinator (remote backends over the worker streams):
//
//   prefill both caches to the context but its last token (the pending one), concurrently;
//   each round: k = policy.Next() lowered to what the limits can use; the draft proposes up
//   to k guesses; the target verifies them with the pending token in one pass; the kept
//   guesses, the target's next token and any tokens it continued with go through the stop
//   rules (stop_rules.h) to the caller; the policy and the statistics learn the round.
//
// Pipelined (RoundDriverOptions::pipelined): each draft call asks for one guess more than the
// round tests, the draft's stand-in s for the target's next token. While the target verifies
// g1..gk, the draft is already asked for the next round's guesses after [sequence, g1..gk, s]
// (its call in flight during the verify; a synchronous backend runs it first). When the verify
// keeps all k and its next token is s, the next round uses those guesses without a draft call
// (SpeculationStats::predrafted_rounds); otherwise they are dropped, and positions make that
// safe: the next call syncs the draft's cache by position. The guesses of a hit are exactly
// those a draft call for that sequence returns, so for a fixed k the output is token for token
// the sequential output (any coupling, any seed).
//
// Forced tokens (RoundDriverOptions::forced_tokens, the output's constraint): before drafting,
// while the constraint allows exactly one token after the sequence and the tokens forced so
// far, that token is a guess with q = {token: 1}, up to the round's k (a stop id ends them);
// the draft proposes the rest of the round's guesses after them (asked k minus the forced), and
// no draft call is made for a round they fill. They are verified with the others in the same
// target pass: under the standard rule p(token) = 1 keeps them, under Gumbel coupling the pick
// over a one-token support is the token, so they change no output and cost no draft pass
// (jump-forward decoding as speculation). Pipelined, the next round's forced tokens are found
// before its guesses are drafted ahead, so a pre-drafted round is still exactly a sequential
// one. SpeculationStats::forced and forced_accepted count them; RoundReport::drafted and
// accepted (and so the policy of k and the per-position statistics) count only the draft's
// guesses, and a round of forced guesses alone teaches the policy nothing. A dead end right
// after the sequence ends the call with its DeadEndError (output_constraint.h) before any
// guess; the target would report the same.
//
// Predicted guesses (RoundDriverOptions::prediction, the client's predicted output): before a
// round, when the prediction has guesses after the sequence and its policy's k is not 0, the
// round tests the forced tokens then up to k of the prediction's (each with q = {token: 1}),
// and makes no draft call; otherwise (nothing predicted there, or the policy sits the round
// out) the round is the draft's as above. A predicted round teaches only the prediction's
// policy, and its guesses count in SpeculationStats::predicted and predicted_accepted, not in
// drafted and accepted. Greedy and Gumbel-coupled output are unchanged by them, as by the
// forced tokens.
//
// A draft that fails, or whose guesses the target refuses (kInvalidArgument), is abandoned
// when RoundDriverOptions::survive_draft_failure says so: the call goes on with the fallback
// drafter (the n-gram one) or the target alone, and SpeculationStats::draft_failed is set.
// Otherwise its error ends the call.
//
// Thread-safety: a driver runs one Generate at a time, on the caller's thread; it waits for
// every backend call it starts before returning.
#ifndef TANDEM_CORE_GENERATION_ROUND_DRIVER_H_
#define TANDEM_CORE_GENERATION_ROUND_DRIVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/generation_result.h"
#include "core/generation/output_constraint.h"
#include "core/generation/prediction_drafter.h"
#include "core/generation/prediction_length_policy.h"
#include "core/generation/round_backends.h"
#include "core/generation/stop_rules.h"

namespace tandem {

struct RoundLimits {
  absl::Span<const int32_t> stop_ids;
  int64_t max_tokens = 0;    // > 0
  int64_t context_size = 0;  // the caches' positions
};

struct RoundDriverOptions {
  bool survive_draft_failure = false;
  bool pipelined = false;  // draft the next round while the target verifies (above)
  // The output's constraint, this driver's own object (or one used only on its thread, e.g.
  // the n-gram drafter's), or null: where it allows exactly one token, that token is a free
  // guess (above). The output begins after the sequence Generate is given.
  TokenConstraint* forced_tokens = nullptr;
  // The client's predicted output and the policy of its k (both or neither; above); the
  // driver's own objects for the call.
  PredictionDrafter* prediction = nullptr;
  PredictionLengthPolicy* prediction_policy = nullptr;
};

// Hooks for logs and metrics (each may be empty).
struct RoundEvents {
  std::function<void(const absl::Status& why)> draft_dropped;
  std::function<void(const RoundReport& round)> round_done;  // after each verify
};

class RoundDriver {
 public:
  // `draft` and `fallback` may be null (no draft: the target alone). The backends and the
  // policy must outlive the driver.
  RoundDriver(TargetBackend& target, DraftBackend* draft, DraftBackend* fallback,
              DraftLengthPolicy& policy, RoundDriverOptions options = {}, RoundEvents events = {});

  // Decodes after `sequence` (a non-empty context whose last token is the pending one, that
  // fits the limits' context): appends each emitted token to `sequence` (the last one is
  // never run) and reports each round's to `on_round`. stats.prompt_tokens counts the
  // context tokens the target's cache did not hold. The backends' errors as is.
  absl::StatusOr<GenerationResult> Generate(std::vector<int32_t>& sequence,
                                            const RoundLimits& limits,
                                            RoundTokensCallback on_round);

 private:
  absl::Status Prefill(absl::Span<const int32_t> sequence, GenerationResult& result);
  // One round: guesses, verify, statistics. Fills verdict_ and proposal_. `room`: the most
  // tokens after the round's next one the limit can use.
  absl::Status Round(std::vector<int32_t>& sequence, int32_t k, int32_t room,
                     const RoundLimits& limits, GenerationResult& result);
  // The round's k: the draft policy's, or the prediction policy's for a predicted round
  // (predicting_), lowered to what the limits can use.
  int32_t NextK(absl::Span<const int32_t> sequence, int64_t room, const RoundLimits& limits);
  // The round's guesses into proposal_: the forced tokens (forced_), then the pre-drafted
  // guesses or a draft call's; `standin` receives the draft's guess after them (pipelined), or
  // -1. `sequence` is restored before returning.
  absl::Status Guesses(std::vector<int32_t>& sequence, int32_t k, const RoundLimits& limits,
                       RoundReport& report, GenerationResult& result, int32_t* standin);
  // Guesses without pre-drafted ones: the forced tokens into forced_, then a draft call for
  // the rest into proposal_ (`asked`: what it asked for; 0 without a call). A failed call drops
  // the draft (DropDraft).
  absl::Status ForceAndDraft(std::vector<int32_t>& sequence, int32_t k, const RoundLimits& limits,
                             RoundReport& report, GenerationResult& result, int32_t* asked);
  // The tokens the constraint forces after `sequence`, at most `limit`, into `forced` and
  // appended to `sequence`; a stop id ends them. The error of a dead end (or a refused token)
  // right after the sequence; later ones just end the forced tokens.
  absl::Status Force(std::vector<int32_t>& sequence, int32_t limit,
                     absl::Span<const int32_t> stop_ids, std::vector<int32_t>* forced);
  // A predicted round's guesses: the forced tokens into forced_, then the prediction's after
  // them into proposal_ (each with q = {token: 1}).
  absl::Status ForceAndPredict(std::vector<int32_t>& sequence, int32_t k,
                               const RoundLimits& limits);
  // Puts forced_ before the draft's guesses in proposal_, each with q = {token: 1}.
  void PrependForced();
  // Pipelined: starts drafting the next round after sequence + proposal_ + standin + its
  // forced tokens (appended to `sequence` until WaitAhead).
  void StartAhead(std::vector<int32_t>& sequence, int32_t standin, int32_t room,
                  const RoundLimits& limits, GenerationResult& result);
  // Waits for the call StartAhead made, if any, and cuts `sequence` back to `length`.
  absl::Status WaitAhead(std::vector<int32_t>& sequence, size_t length);
  absl::Status Verify(absl::Span<const int32_t> sequence, int32_t continue_limit);
  // Abandons the draft in use for `why`, or returns `why` when drafts may not fail.
  absl::Status DropDraft(const absl::Status& why, GenerationResult& result);
  void Record(const RoundReport& round, SpeculationStats& stats);

  TargetBackend& target_;
  DraftBackend* primary_;
  DraftBackend* fallback_;
  DraftBackend* draft_;  // the drafter in use: primary_, then fallback_ once it failed
  DraftLengthPolicy& policy_;
  RoundDriverOptions options_;
  RoundEvents events_;
  // Pipelined: the next round's guesses, the call drafting them, and its seconds.
  Proposal ahead_;
  std::vector<int32_t> ahead_forced_;  // the next round's forced tokens, before ahead_'s
  std::future<absl::Status> ahead_call_;
  double ahead_seconds_ = 0;
  int32_t ahead_asked_ = 0;  // the guesses that call asked for
  bool predrafted_ = false;  // ahead_ holds the guesses for the current sequence
  // When the previous round ended (RoundReport::round_seconds), or the decode began.
  std::chrono::steady_clock::time_point last_round_end_;
  // The output's constraint for forced tokens (options_.forced_tokens from Generate's start).
  OutputConstraint constrained_;
  TokenMask forced_mask_;
  // Per-round buffers, reused.
  std::vector<int32_t> forced_;  // the round's forced tokens, the first of proposal_'s
  bool predicting_ = false;      // the round tests predicted guesses
  std::vector<int32_t> predicted_;
  Proposal proposal_;
  Verdict verdict_;
  std::vector<int32_t> round_tokens_;
  std::vector<int32_t> emitted_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_ROUND_DRIVER_H_
