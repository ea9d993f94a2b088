#include "services/coordinator/kv_admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/generation/prediction_length_policy.h"
#include "core/kernels/vector_ops.h"

namespace tandem {

void AddReplicaKv(const v1::DescribeResponse& replica, bool first, KvBudget* budget) {
  const v1::KvCapacity& kv = replica.kv_capacity();
  if (kv.global_blocks() <= 0 || (!first && !budget->bounded())) {
    *budget = KvBudget();  // one replica without a bound: nothing to account
    return;
  }
  budget->total.global += kv.global_blocks();
  budget->total.sliding += kv.sliding_blocks();
  budget->largest.global = std::max(budget->largest.global, kv.global_blocks());
  budget->largest.sliding = std::max(budget->largest.sliding, kv.sliding_blocks());
  budget->ring_blocks = std::max(budget->ring_blocks, kv.ring_blocks());
}

namespace {

// Positions one round may write past the accepted tokens: the pending token and its guesses
// (or the tokens the target continues alone); the last round may do so past max_tokens.
int64_t RoundExtra(const RoundParams& params) {
  int64_t round = params.continue_tokens;
  if (params.speculate) {
    round = std::max<int64_t>(round, params.adaptive
                                         ? std::max(params.draft_tokens, params.max_draft_tokens)
                                         : params.draft_tokens);
    if (!params.prediction.empty()) {
      round = std::max<int64_t>(round, PredictionLengthOptions().max_tokens);
    }
  }
  return round + 1;
}

}  // namespace

int64_t KvPositionsFor(const RoundParams& params, int64_t context_size) {
  const int64_t positions =
      static_cast<int64_t>(params.context.size()) + params.max_tokens + RoundExtra(params);
  return std::min(positions, context_size);
}

KvBlockDemand KvBlocksFor(int64_t positions, const KvBudget& budget) {
  KvBlockDemand blocks;
  blocks.global = (positions + kKeyBlock - 1) / kKeyBlock;
  // A ring holds at most its window's blocks, and never more than the positions need.
  if (budget.ring_blocks > 0) blocks.sliding = std::min(blocks.global, budget.ring_blocks);
  return blocks;
}

absl::StatusOr<KvBlockDemand> KvReservation(const RoundParams& params, int64_t context_size,
                                            const KvBudget& budget) {
  if (!budget.bounded()) return KvBlockDemand();
  const int64_t positions = KvPositionsFor(params, context_size);
  const KvBlockDemand blocks = KvBlocksFor(positions, budget);
  if (blocks.global > budget.largest.global || blocks.sliding > budget.largest.sliding) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request needs up to ", positions, " KV positions (prompt ", params.context.size(),
        " + max_tokens ", params.max_tokens, " + ", RoundExtra(params),
        " for a round, within the context of ", context_size, "): ", blocks.global, " blocks of ",
        kKeyBlock, " positions",
        blocks.sliding > 0 ? absl::StrCat(" and ", blocks.sliding, " sliding-window blocks") : "",
        ", more than a target worker's KV budget (--kv-budget-mb) holds: ", budget.largest.global,
        " blocks",
        budget.largest.sliding > 0 ? absl::StrCat(" and ", budget.largest.sliding, " sliding") : "",
        "; lower max_tokens or shorten the prompt"));
  }
  return blocks;
}

}  // namespace tandem
