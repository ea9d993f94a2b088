// A request that the target's KV memory runs short of after its first token is paused, not
// failed: the admission's count of KV blocks (kv_admission.h) is per coordinator, and another
// coordinator (or a replica with a smaller budget) may share the worker. While it waits, its
// session is idle on the worker, whose blocks other sessions' requests may reclaim; it then
// resumes from its history (the prompt and every token streamed so far), and the worker
// recomputes what it dropped. Every draw is keyed by its absolute position, so the tokens are
// those an uninterrupted run would give: the client sees only a pause.
//
// Not thread-safe: one request of one session at a time (as RunRequest).
#ifndef TANDEM_SERVICES_COORDINATOR_MEMORY_PAUSE_H_
#define TANDEM_SERVICES_COORDINATOR_MEMORY_PAUSE_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/coordinator/round_loop.h"

namespace tandem {

struct MemoryPause {
  absl::Time deadline = absl::InfiniteFuture();  // the request's
  // Gives up (the last RESOURCE_EXHAUSTED as is) after this long without a new token.
  absl::Duration without_progress = absl::Seconds(30);
  absl::Duration first_pause = absl::Milliseconds(20);  // doubling up to max_pause
  absl::Duration max_pause = absl::Seconds(1);
  std::function<bool()> stop;  // e.g. the client went away; may be empty
  // Before each pause: the tokens generated so far, the pause, the worker's error.
  std::function<void(int64_t generated, absl::Duration pause, const absl::Status& why)> on_pause;
};

// RunRequest, resumed after each kResourceExhausted that comes once a token was generated.
// The outcome's usage is the whole request's. Errors before the first token, and every other
// error, as RunRequest returns them.
absl::StatusOr<RoundOutcome> RunPausingForMemory(SessionWorkers& session, const RoundParams& params,
                                                 const RoundCallback& on_tokens,
                                                 const ReopenTarget& reopen_target,
                                                 const RoundObserver& observer,
                                                 const MemoryPause& pause);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_MEMORY_PAUSE_H_
