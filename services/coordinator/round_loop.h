// Runs one Generate request over a session's workers: prefill, then speculative rounds
// (docs/architecture.md) — draft k guesses on the draft worker, verify them in one batched
// pass on the target worker — appending what the target accepts to the session's history.
//
// Caches sync by position: the loop tracks how many leading history tokens each worker's
// cache holds and sends only what is new. Every worker call has a deadline (CallDeadlines).
// If the draft fails or is late, the request goes on with the target alone (k = 0 rounds: the
// target samples one token per verify); if the target fails or is late, `reopen_target` gives
// a stream on another (or the restarted) replica, which is re-synced from the history.
// No accepted token is lost or repeated.
//
// The loop is core's RoundDriver (round_driver.h) over WorkerTarget and WorkerDraft
// (remote_backends.h) or the n-gram drafter; the two prefills run concurrently. This file
// converts the request and the outcome.
//
// What the loop runs over and with (SessionWorkers, RoundParams, ...) is in round_params.h.
//
// Not thread-safe: one request of one session at a time.
#ifndef TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_
#define TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "services/coordinator/round_params.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct RoundOutcome {
  v1::FinishReason finish_reason = v1::FINISH_REASON_UNSPECIFIED;
  int32_t prompt_tokens = 0;
  int32_t cached_prompt_tokens = 0;  // what the target worker reused (SyncResult.reused_tokens)
  int32_t generated = 0;
  double prefill_seconds = 0;
  v1::SpeculationStats speculation;
};

// Called after each round with its new tokens (before stop strings); returns false to stop
// (client gone, stop string seen). It may cut `tokens` to those it used — up to the one that
// completed a stop string — and the rest count as never generated. A stop reported here wins
// over the token limit or a full context reached by the same tokens: STOP_STRING.
using RoundCallback = std::function<bool(std::vector<int32_t>& tokens)>;

absl::StatusOr<RoundOutcome> RunRequest(SessionWorkers& session, const RoundParams& params,
                                        const RoundCallback& on_tokens,
                                        const ReopenTarget& reopen_target,
                                        const RoundObserver& observer);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_
