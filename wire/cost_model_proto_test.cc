#include "wire/cost_model_proto.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(CostModelProtoTest, EveryEstimateSurvivesTheRoundTrip) {
  DraftCostEstimates e;
  e.acceptance = {0.9, 0.8, 0.75};
  e.draft_token_seconds = 1e-4;
  e.draft_overhead_seconds = 2e-4;
  e.verify_base_seconds = 3e-4;
  e.verify_row_seconds = 4e-5;
  e.verify_overhead_seconds = 5e-4;
  e.alone_token_seconds = 6e-4;
  e.round_overhead_seconds = 7e-5;
  e.chosen_k = 3;
  e.predicted_tokens_per_second = 1234.5;
  e.predicted_alone_tokens_per_second = 987.5;
  v1::DraftCostEstimates proto;
  CostEstimatesToProto(e, &proto);
  EXPECT_THAT(proto.acceptance_per_position(), ::testing::ElementsAre(0.9, 0.8, 0.75));
  EXPECT_EQ(proto.chosen_draft_tokens(), 3);
  const DraftCostEstimates back = CostEstimatesFromProto(proto);
  EXPECT_EQ(back.acceptance, e.acceptance);
  EXPECT_EQ(back.draft_token_seconds, e.draft_token_seconds);
  EXPECT_EQ(back.draft_overhead_seconds, e.draft_overhead_seconds);
  EXPECT_EQ(back.verify_base_seconds, e.verify_base_seconds);
  EXPECT_EQ(back.verify_row_seconds, e.verify_row_seconds);
  EXPECT_EQ(back.verify_overhead_seconds, e.verify_overhead_seconds);
  EXPECT_EQ(back.alone_token_seconds, e.alone_token_seconds);
  EXPECT_EQ(back.round_overhead_seconds, e.round_overhead_seconds);
  EXPECT_EQ(back.chosen_k, 3);
  EXPECT_EQ(back.predicted_tokens_per_second, e.predicted_tokens_per_second);
  EXPECT_EQ(back.predicted_alone_tokens_per_second, e.predicted_alone_tokens_per_second);
}

}  // namespace
}  // namespace tandem
