// Test-only: prompts and the greedy next token through a WorkerEngine, for the engine's tests.
#ifndef TANDEM_WORKERS_ENGINE_TEST_UTIL_H_
#define TANDEM_WORKERS_ENGINE_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "workers/worker_engine.h"

namespace tandem::testing {

// A prompt of n ids in [3, 503) (inside the stories260K and fixture vocabularies), distinct
// per seed, BOS first.
inline std::vector<int32_t> LongPrompt(int seed, int n) {
  std::vector<int32_t> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 37 + seed * 101) % 500 + 3));
  return ids;
}

// The greedy next token after `prompt` (all but its last id synced from `position`, the last
// one pending).
inline absl::StatusOr<int32_t> NextAfter(WorkerEngine& engine, int64_t session,
                                         const std::vector<int32_t>& prompt, int64_t position) {
  SamplerConfig greedy;
  greedy.temperature = 0;
  std::vector<int32_t> rest(prompt.begin() + position, prompt.end() - 1);
  absl::StatusOr<AcceptanceResult> verdict =
      engine.Verify(session, position, rest, prompt.back(), {}, {}, greedy, nullptr);
  if (!verdict.ok()) return verdict.status();
  return verdict->next_token;
}

}  // namespace tandem::testing

#endif  // TANDEM_WORKERS_ENGINE_TEST_UTIL_H_
