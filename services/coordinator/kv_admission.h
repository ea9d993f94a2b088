// What a request may need of a target worker's KV memory, for admission (admission_queue.h):
// admitting only what the targets' KV budgets (--kv-budget-mb, learnt from Describe's
// kv_capacity) can hold together means a running request can always grow its cache, so
// memory never fails a request after its first token.
//
// A request's cache holds at most its prompt, its max_tokens and what one round writes past
// the accepted tokens (the guesses, or the tokens a target continues alone, and the pending
// one), within the context. Blocks shared between sessions' prefixes are counted for each,
// so the bound errs on the safe side.
//
// Plain functions and a plain struct; thread-compatible.
#ifndef TANDEM_SERVICES_COORDINATOR_KV_ADMISSION_H_
#define TANDEM_SERVICES_COORDINATOR_KV_ADMISSION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/decoder/kv_memory.h"
#include "services/coordinator/round_params.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

// The target workers' KV budgets, in blocks.
struct KvBudget {
  KvBlockDemand total;      // all replicas together; global 0: some replica has no bound
  KvBlockDemand largest;    // the largest single replica's (a session lives on one)
  int64_t ring_blocks = 0;  // the most sliding blocks one session holds; 0: no sliding layer
  bool bounded() const { return total.global > 0; }
};

// Adds one target replica's Describe to `budget`; a replica without a bound makes the whole
// budget unbounded (no KV accounting).
void AddReplicaKv(const v1::DescribeResponse& replica, bool first, KvBudget* budget);

// Positions the request's cache may reach: prompt + max_tokens + one round's extra
// (max(k, continue_tokens) + 1), at most `context_size`.
int64_t KvPositionsFor(const RoundParams& params, int64_t context_size);

// The blocks of each pool a cache of `positions` positions holds at most.
KvBlockDemand KvBlocksFor(int64_t positions, const KvBudget& budget);

// The blocks the request reserves while it runs ({} when the budget is unbounded);
// kResourceExhausted, naming the positions, the blocks and the budget, when it needs more
// than a whole replica's budget and so could never run.
absl::StatusOr<KvBlockDemand> KvReservation(const RoundParams& params, int64_t context_size,
                                            const KvBudget& budget);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_KV_ADMISSION_H_
