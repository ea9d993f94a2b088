#include "services/coordinator/kv_admission.h"

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

RoundParams Request(int prompt, int32_t max_tokens) {
  RoundParams params;
  params.context.assign(prompt, 7);
  params.max_tokens = max_tokens;
  params.speculate = false;
  params.continue_tokens = 3;
  return params;
}

v1::DescribeResponse Replica(int64_t global, int64_t sliding = 0, int64_t ring = 0) {
  v1::DescribeResponse d;
  if (global > 0) {
    d.mutable_kv_capacity()->set_block_positions(16);
    d.mutable_kv_capacity()->set_global_blocks(global);
    d.mutable_kv_capacity()->set_sliding_blocks(sliding);
    d.mutable_kv_capacity()->set_ring_blocks(ring);
  }
  return d;
}

TEST(KvAdmissionTest, PositionsArePromptMaxTokensAndOneRoundWithinTheContext) {
  RoundParams target_alone = Request(40, 400);
  EXPECT_EQ(KvPositionsFor(target_alone, 2048), 40 + 400 + 3 + 1);  // continued tokens, pending
  RoundParams fixed = Request(40, 400);
  fixed.speculate = true;
  fixed.draft_tokens = 8;
  EXPECT_EQ(KvPositionsFor(fixed, 2048), 40 + 400 + 8 + 1);
  RoundParams adaptive = fixed;
  adaptive.adaptive = true;
  adaptive.max_draft_tokens = 16;
  EXPECT_EQ(KvPositionsFor(adaptive, 2048), 40 + 400 + 16 + 1);
  EXPECT_EQ(KvPositionsFor(adaptive, 300), 300);
}

TEST(KvAdmissionTest, BlocksRoundUpAndARingHoldsAtMostItsWindow) {
  KvBudget global_only;
  AddReplicaKv(Replica(100), true, &global_only);
  EXPECT_EQ(KvBlocksFor(16, global_only).global, 1);
  EXPECT_EQ(KvBlocksFor(17, global_only).global, 2);
  EXPECT_EQ(KvBlocksFor(17, global_only).sliding, 0);
  KvBudget sliding;
  AddReplicaKv(Replica(100, 60, 39), true, &sliding);
  EXPECT_EQ(KvBlocksFor(100, sliding).sliding, 7);    // shorter than the ring
  EXPECT_EQ(KvBlocksFor(2048, sliding).sliding, 39);  // the ring
}

TEST(KvAdmissionTest, ReplicasAddUpAndOneWithoutABoundLiftsTheBound) {
  KvBudget budget;
  AddReplicaKv(Replica(100), true, &budget);
  AddReplicaKv(Replica(60), false, &budget);
  EXPECT_TRUE(budget.bounded());
  EXPECT_EQ(budget.total.global, 160);
  EXPECT_EQ(budget.largest.global, 100);
  AddReplicaKv(Replica(0), false, &budget);
  EXPECT_FALSE(budget.bounded());
  AddReplicaKv(Replica(50), false, &budget);  // stays unbounded
  EXPECT_FALSE(budget.bounded());
}

TEST(KvAdmissionTest, ReservesTheBlocksARequestMayNeed) {
  KvBudget budget;
  AddReplicaKv(Replica(96), true, &budget);
  ASSERT_OK_AND_ASSIGN(KvBlockDemand blocks, KvReservation(Request(40, 400), 2048, budget));
  EXPECT_EQ(blocks.global, 28);  // ceil(444 / 16)
  EXPECT_EQ(blocks.sliding, 0);
}

TEST(KvAdmissionTest, ARequestLargerThanAWholeReplicaIsRefusedNamingTheNumbers) {
  KvBudget budget;
  AddReplicaKv(Replica(96), true, &budget);
  AddReplicaKv(Replica(96), false, &budget);  // together 192, but a session lives on one
  EXPECT_THAT(KvReservation(Request(40, 1600), 2048, budget).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("1644 KV positions"), HasSubstr("prompt 40"),
                             HasSubstr("max_tokens 1600"), HasSubstr("103 blocks"),
                             HasSubstr("--kv-budget-mb"), HasSubstr("holds: 96 blocks"))));
}

TEST(KvAdmissionTest, NoBoundReservesNothing) {
  ASSERT_OK_AND_ASSIGN(KvBlockDemand blocks, KvReservation(Request(40, 1600), 2048, KvBudget()));
  EXPECT_EQ(blocks.total(), 0);
}

}  // namespace
}  // namespace tandem
