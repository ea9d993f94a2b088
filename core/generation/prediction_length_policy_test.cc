#include "core/generation/prediction_length_policy.h"

#include "gtest/gtest.h"

namespace tandem {
namespace {

// A round of k predicted guesses, `kept` of them kept, costing base + row k seconds.
RoundReport Round(int32_t k, int32_t kept, double base = 0.010, double row = 0.0005) {
  RoundReport round;
  round.predicted = k;
  round.predicted_accepted = kept;
  round.round_seconds = base + row * k;
  round.verify_seconds = round.round_seconds;
  return round;
}

TEST(PredictionLengthPolicyTest, StartsWithTheInitialTokens) {
  PredictionLengthOptions options;
  options.initial_tokens = 6;
  EXPECT_EQ(PredictionLengthPolicy(options).Next(), 6);
}

TEST(PredictionLengthPolicyTest, AnExactPredictionGetsTheLongestRounds) {
  PredictionLengthPolicy policy;
  for (int i = 0; i < 20; ++i) policy.Observe(Round(policy.Next(), policy.Next()));
  EXPECT_EQ(policy.Next(), PredictionLengthOptions().max_tokens);
  EXPECT_GT(policy.acceptance(), 0.99);
}

TEST(PredictionLengthPolicyTest, AnUnrelatedPredictionSitsRoundsOut) {
  PredictionLengthPolicy policy;
  for (int i = 0; i < 20 && policy.Next() > 0; ++i) policy.Observe(Round(policy.Next(), 0));
  EXPECT_EQ(policy.Next(), 0);
  EXPECT_LT(policy.acceptance(), 0.2);
}

TEST(PredictionLengthPolicyTest, AFifthEditedPredictionGetsShortRounds) {
  PredictionLengthPolicy policy;
  for (int i = 0; i < 40; ++i) {
    const int32_t k = policy.Next();
    policy.Observe(Round(k, std::min(k, 4)));  // a run of 4 then an edit
  }
  EXPECT_GE(policy.Next(), 3);
  EXPECT_LE(policy.Next(), 12);
  EXPECT_NEAR(policy.acceptance(), 0.8, 0.02);
}

TEST(PredictionLengthPolicyTest, ExpensiveRowsShortenTheRounds) {
  PredictionLengthPolicy cheap, dear;
  for (int i = 0; i < 40; ++i) {
    cheap.Observe(Round(cheap.Next(), std::min(cheap.Next(), 9), 0.010, 0.0002));
    dear.Observe(Round(dear.Next(), std::min(dear.Next(), 9), 0.010, 0.004));
  }
  EXPECT_LT(dear.Next(), cheap.Next());
}

TEST(PredictionLengthPolicyTest, ProbesAgainAfterSittingOut) {
  PredictionLengthOptions options;
  options.probe_after_rounds = 3;
  PredictionLengthPolicy policy(options);
  for (int i = 0; i < 20 && policy.Next() > 0; ++i) policy.Observe(Round(policy.Next(), 0));
  ASSERT_EQ(policy.Next(), 0);
  policy.SatOut();
  policy.SatOut();
  EXPECT_EQ(policy.Next(), 0);
  policy.SatOut();
  EXPECT_EQ(policy.Next(), options.probe_tokens);
}

// A first guess lost to a tokenization seam and a slow first call do not end the prediction.
TEST(PredictionLengthPolicyTest, TheFirstRoundsNeverSitOut) {
  PredictionLengthPolicy policy;
  policy.Observe(Round(policy.Next(), 0, 0.050, 0.010));
  for (int i = 1; i < PredictionLengthOptions().evidence_rounds; ++i) {
    ASSERT_GT(policy.Next(), 0) << "round " << i;
    policy.Observe(Round(policy.Next(), 1, 0.002, 0.0001));
  }
}

// Slow rounds at the largest k (a preempted call) must not make a round without guesses look
// free: an exact prediction keeps being guessed.
TEST(PredictionLengthPolicyTest, PreemptedRoundsDoNotStopAnExactPrediction) {
  PredictionLengthPolicy policy;
  for (int i = 0; i < 60; ++i) {
    const int32_t k = policy.Next();
    ASSERT_GT(k, 0) << "round " << i;
    RoundReport round = Round(k, k);
    if (i % 5 == 4) round.round_seconds *= 20;  // preempted
    policy.Observe(round);
  }
}

}  // namespace
}  // namespace tandem
