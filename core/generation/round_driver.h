// The one loop of speculative decoding (DESIGN.md §2), over a DraftBackend and a
// TargetBackend (round_backends.h), shared by SpeculativeSession (in-process backends) and
// the coordinator (remote backends over the worker streams):
//
//   prefill both caches to the context but its last token (the pending one), concurrently;
//   each round: k = policy.Next() lowered to what the limits can use; the draft proposes up
//   to k guesses; the target verifies them with the pending token in one pass; the kept
//   guesses, the target's next token and any tokens it continued with go through the stop
//   rules (stop_rules.h) to the caller; the policy and the statistics learn the round.
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

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/generation_result.h"
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
  // One round: guesses, verify, statistics. Fills verdict_ and proposal_.
  absl::Status Round(absl::Span<const int32_t> sequence, int32_t k, int32_t continue_limit,
                     GenerationResult& result);
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
  // Per-round buffers, reused.
  Proposal proposal_;
  Verdict verdict_;
  std::vector<int32_t> round_tokens_;
  std::vector<int32_t> emitted_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_ROUND_DRIVER_H_
