#include "client/logits/logits_metrics.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CompareLogitsTest, GivesMaxAbsWithItsPlaceRmsAndArgmaxAgreement) {
  // Rows: [0, 1, 2] vs [0, 1, 2.5] (same argmax), [3, 0, 0] vs [2, 2.5, 0] (argmax differs).
  const std::vector<double> a = {0, 1, 2, 3, 0, 0};
  const std::vector<double> b = {0, 1, 2.5, 2, 2.5, 0};
  ASSERT_OK_AND_ASSIGN(LogitsComparison c, CompareLogits(a, b, 2, 3));
  EXPECT_EQ(c.rows, 2);
  EXPECT_EQ(c.max_abs, 2.5);
  EXPECT_EQ(c.max_abs_row, 1);
  EXPECT_EQ(c.max_abs_col, 1);
  EXPECT_DOUBLE_EQ(c.rms, std::sqrt((0.25 + 1 + 6.25) / 6));
  EXPECT_EQ(c.argmax_agree, 1);
}

TEST(CompareLogitsTest, IdenticalInputsGiveZeroAndANaNIsNeverASilentPass) {
  const std::vector<double> a = {0.5, -1, 7, 7};
  ASSERT_OK_AND_ASSIGN(LogitsComparison same, CompareLogits(a, a, 2, 2));
  EXPECT_EQ(same.max_abs, 0);
  EXPECT_EQ(same.rms, 0);
  EXPECT_EQ(same.argmax_agree, 2);
  const std::vector<double> with_nan = {0.5, kNaN, 7, 9};
  ASSERT_OK_AND_ASSIGN(LogitsComparison c, CompareLogits(with_nan, a, 2, 2));
  EXPECT_TRUE(std::isnan(c.max_abs));
  EXPECT_EQ(c.max_abs_col, 1);
  EXPECT_TRUE(std::isnan(c.rms));
}

TEST(CompareLogitsTest, RefusesSizesThatDoNotMatchTheShape) {
  const std::vector<double> six(6), five(5);
  EXPECT_THAT(CompareLogits(six, five, 2, 3), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CompareLogits(six, six, 3, 3), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CompareLogits({}, {}, 0, 3), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(KlDivergence(six, five, 2, 3), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ArgMaxTest, TakesTheLowestIndexOfEqualMaximaAndSkipsNaN) {
  EXPECT_EQ(ArgMax(std::vector<double>{1, 3, 3, 2}), 1);
  EXPECT_EQ(ArgMax(std::vector<double>{kNaN, 1, kNaN, 0.5}), 1);
  EXPECT_EQ(ArgMax(std::vector<double>{-kInf, -kInf}), 0);
}

TEST(RowKlTest, MatchesTheClosedFormAndIsZeroForAShiftedRow) {
  // p uniform over 2; q = (1/4, 3/4): KL = ½·ln(2) + ½·ln(2/3) = ½·ln(4/3).
  EXPECT_NEAR(RowKl(std::vector<double>{0, 0}, std::vector<double>{0, std::log(3.0)}),
              0.5 * std::log(4.0 / 3.0), 1e-15);
  // Softmax ignores a constant shift, even a large one (no overflow).
  EXPECT_NEAR(RowKl(std::vector<double>{1, 2, 3}, std::vector<double>{1001, 1002, 1003}), 0, 1e-12);
  // A token the base gives probability 0 contributes nothing; one it gives mass but the test
  // does not makes KL infinite.
  EXPECT_NEAR(RowKl(std::vector<double>{0, -kInf}, std::vector<double>{0, 5}),
              std::log(1 + std::exp(5.0)), 1e-12);
  EXPECT_EQ(RowKl(std::vector<double>{0, 0}, std::vector<double>{0, -kInf}), kInf);
}

TEST(KlDivergenceTest, GivesMeanP99MaxAndTopAgreementOverRows) {
  // Row r: base (0, 0) against test (0, ln(1 + r)): KL_r = ½·ln((2 + r)² / (4·(1 + r))).
  constexpr int kRows = 5;
  std::vector<double> base, test;
  std::vector<double> kl;
  for (int r = 0; r < kRows; ++r) {
    base.insert(base.end(), {0, 0});
    test.insert(test.end(), {0, std::log(1.0 + r)});
    kl.push_back(0.5 * std::log((2.0 + r) * (2.0 + r) / (4.0 * (1 + r))));
  }
  ASSERT_OK_AND_ASSIGN(KlStats s, KlDivergence(base, test, kRows, 2));
  EXPECT_EQ(s.rows, kRows);
  EXPECT_NEAR(s.mean, (kl[0] + kl[1] + kl[2] + kl[3] + kl[4]) / 5, 1e-15);
  // KL grows with r; the 99th percentile sits at rank 0.99·4 = 3.96 between rows 3 and 4.
  EXPECT_NEAR(s.p99, kl[3] + 0.96 * (kl[4] - kl[3]), 1e-15);
  EXPECT_NEAR(s.max, kl[4], 1e-15);
  EXPECT_EQ(s.top_agree, 1);  // row 0 ties (index 0 in both); the others pick index 1
  ASSERT_OK_AND_ASSIGN(KlStats same, KlDivergence(test, test, kRows, 2));
  EXPECT_EQ(same.mean, 0);
  EXPECT_EQ(same.p99, 0);
  EXPECT_EQ(same.top_agree, kRows);
}

TEST(KlDivergenceTest, ANaNMakesEveryFigureNaN) {
  const std::vector<double> base = {0, 1, 2, 3};
  const std::vector<double> test = {0, kNaN, 2, 3};
  ASSERT_OK_AND_ASSIGN(KlStats s, KlDivergence(base, test, 2, 2));
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.p99));
  EXPECT_TRUE(std::isnan(s.max));
}

}  // namespace
}  // namespace tandem
