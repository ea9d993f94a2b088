#include "core/generation/token_logprobs.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct LogprobCase {
  std::string name;
  std::vector<float> logits;
  int32_t token;
  double expected;  // log p(token)
};

class LogprobsOfTest : public ::testing::TestWithParam<LogprobCase> {};

TEST_P(LogprobsOfTest, ChosenIsLogSoftmaxOfRawLogits) {
  const LogprobCase& c = GetParam();
  const TokenLogprobs out = LogprobsOf(c.logits, c.token, 0);
  EXPECT_EQ(out.chosen.token, c.token);
  EXPECT_NEAR(out.chosen.logprob, c.expected, 1e-6);
  EXPECT_TRUE(out.top.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Rows, LogprobsOfTest,
    ::testing::Values(
        LogprobCase{"Uniform", {2.f, 2.f, 2.f, 2.f}, 1, std::log(0.25)},
        // exp(0) : exp(ln 3) = 1 : 3.
        LogprobCase{"OneToThree", {0.f, static_cast<float>(std::log(3.0))}, 1, std::log(0.75)},
        LogprobCase{"OneToThreeLow", {0.f, static_cast<float>(std::log(3.0))}, 0, std::log(0.25)},
        // A shift of every logit changes nothing, and large ones do not overflow.
        LogprobCase{"LargeShift", {1000.f, 1001.f}, 1, -std::log1p(std::exp(-1.0))},
        LogprobCase{"NegativeInfinityIsImpossible", {0.f, -INFINITY, 0.f}, 2, std::log(0.5)},
        LogprobCase{"SingleToken", {-7.f}, 0, 0.0}),
    [](const auto& info) { return info.param.name; });

TEST(LogprobsOfTest, TopIsMostLikelyFirstWithTiesByLowerId) {
  const std::vector<float> logits = {1.f, 3.f, 2.f, 3.f, 0.f};
  const TokenLogprobs out = LogprobsOf(logits, 4, 3);
  double norm = 0;
  for (float x : logits) norm += std::exp(x);
  ASSERT_EQ(out.top.size(), 3u);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 3);
  EXPECT_EQ(out.top[2].token, 2);
  EXPECT_NEAR(out.top[0].logprob, 3.0 - std::log(norm), 1e-6);
  EXPECT_NEAR(out.top[2].logprob, 2.0 - std::log(norm), 1e-6);
  EXPECT_NEAR(out.chosen.logprob, 0.0 - std::log(norm), 1e-6);
}

TEST(LogprobsOfTest, TopIsClampedToTheVocabulary) {
  const TokenLogprobs out = LogprobsOf(std::vector<float>{0.f, 1.f}, 0, 20);
  ASSERT_EQ(out.top.size(), 2u);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 0);
}

}  // namespace
}  // namespace tandem
