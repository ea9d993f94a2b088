#include "core/generation/random.h"

#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(CounterRandomTest, IsAPureFunctionOfItsKey) {
  // Pinned: changing the hash changes every seeded output of every deployed version.
  EXPECT_EQ(CounterHash(0, 0, RandomPurpose::kSample), 14703833805296472875ull);
  EXPECT_EQ(CounterUniform(42, 7, RandomPurpose::kBonus), 0.85208657090129436);
}

TEST(CounterRandomTest, EveryFieldOfTheKeyChangesTheOutput) {
  std::set<uint64_t> seen;
  int64_t draws = 0;
  for (uint64_t seed : {0ull, 1ull, 2ull, 0xffffffffffffffffull}) {
    for (int64_t position = 0; position < 64; ++position) {
      for (RandomPurpose purpose :
           {RandomPurpose::kDraftDraw, RandomPurpose::kAcceptTest, RandomPurpose::kResidual,
            RandomPurpose::kBonus, RandomPurpose::kSample}) {
        seen.insert(CounterHash(seed, position, purpose));
        ++draws;
      }
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), draws);
}

TEST(CounterRandomTest, UniformIsInTheUnitIntervalAndEvenlySpread) {
  // Chi-square over 20 equal bins, 100000 draws, significance 0.001 (critical value 43.82
  // for 19 degrees of freedom).
  constexpr int kBins = 20;
  constexpr int kDraws = 100000;
  std::vector<int64_t> counts(kBins, 0);
  for (int i = 0; i < kDraws; ++i) {
    const double u = CounterUniform(/*seed=*/7, /*position=*/i, RandomPurpose::kAcceptTest);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ++counts[static_cast<int>(u * kBins)];
  }
  double chi2 = 0;
  const double expected = static_cast<double>(kDraws) / kBins;
  for (int64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 43.82);
}

}  // namespace
}  // namespace tandem
