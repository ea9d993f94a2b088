#include "services/coordinator/memory_pause.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace tandem {

absl::StatusOr<RoundOutcome> RunPausingForMemory(SessionWorkers& session, const RoundParams& params,
                                                 const RoundCallback& on_tokens,
                                                 const ReopenTarget& reopen_target,
                                                 const RoundObserver& observer,
                                                 const MemoryPause& pause) {
  const int64_t prompt = static_cast<int64_t>(params.context.size());
  RoundParams resumed;
  const RoundParams* run = &params;
  int64_t generated = 0;  // before the last pause
  absl::Duration wait = pause.first_pause;
  absl::Time progress = absl::Now();
  while (true) {
    absl::StatusOr<RoundOutcome> outcome =
        RunRequest(session, *run, on_tokens, reopen_target, observer);
    // The history holds the prompt and every token the callback took, failed or not.
    const int64_t now = static_cast<int64_t>(session.history.size()) - prompt;
    if (outcome.ok() && run != &params) {  // resumed: the usage of the whole request
      outcome->prompt_tokens = static_cast<int32_t>(prompt);
      outcome->cached_prompt_tokens =
          std::min(outcome->cached_prompt_tokens, static_cast<int32_t>(prompt));
      outcome->generated += static_cast<int32_t>(generated);
    }
    if (outcome.ok() || outcome.status().code() != absl::StatusCode::kResourceExhausted ||
        now <= 0 || now >= params.max_tokens) {
      return outcome;
    }
    if (now > generated) {
      progress = absl::Now();
      wait = pause.first_pause;
    }
    const absl::Time give_up = std::min(pause.deadline, progress + pause.without_progress);
    if (absl::Now() + wait >= give_up || (pause.stop && pause.stop())) return outcome;
    if (pause.on_pause) pause.on_pause(now, wait, outcome.status());
    absl::SleepFor(wait);
    wait = std::min(2 * wait, pause.max_pause);
    generated = now;
    resumed = params;
    resumed.context = session.history;
    resumed.max_tokens = params.max_tokens - static_cast<int32_t>(generated);
    run = &resumed;
  }
}

}  // namespace tandem
