#include "core/grammar/json_number_range.h"

#include <optional>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_matcher.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

Grammar GrammarOf(GrammarExpr expr) {
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  EXPECT_OK(builder.DefineRule(root, std::move(expr)));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_OK(grammar.status());
  return *std::move(grammar);
}

using Bounds = std::pair<std::optional<int64_t>, std::optional<int64_t>>;

// Every integer in [-1200, 1200] is accepted exactly when it lies within the bounds, in
// canonical form only.
TEST(IntegerRangeExprTest, AcceptsExactlyTheIntegersWithinTheBounds) {
  const std::vector<Bounds> cases = {
      {0, 9},    {0, 0},     {1, 1},       {-5, 5},      {10, 99},    {7, 1003},  {-1003, -7},
      {-1, 0},   {100, 100}, {19, 21},     {123, 987},   {-999, 999}, {0, std::nullopt},
      {57, std::nullopt}, {-57, std::nullopt}, {std::nullopt, 57}, {std::nullopt, -57},
      {std::nullopt, 0}, {std::nullopt, std::nullopt}};
  for (const auto& [lo, hi] : cases) {
    SCOPED_TRACE(::testing::PrintToString(lo) + ".." + ::testing::PrintToString(hi));
    const Grammar grammar = GrammarOf(IntegerRangeExpr(lo, hi));
    for (int64_t v = -1200; v <= 1200; ++v) {
      const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
      ASSERT_EQ(GrammarMatches(grammar, std::to_string(v)), in) << v;
    }
    for (const char* bad : {"-0", "00", "01", "-01", "", "-", "+1"}) {
      EXPECT_FALSE(GrammarMatches(grammar, bad)) << bad;
    }
  }
}

TEST(IntegerRangeExprTest, HandlesBoundsNearTwoToTheFiftyThree) {
  const Grammar grammar = GrammarOf(IntegerRangeExpr(-kMaxExactBound, kMaxExactBound));
  EXPECT_TRUE(GrammarMatches(grammar, "9007199254740992"));
  EXPECT_TRUE(GrammarMatches(grammar, "-9007199254740992"));
  EXPECT_TRUE(GrammarMatches(grammar, "8999999999999999"));
  EXPECT_FALSE(GrammarMatches(grammar, "9007199254740993"));
  EXPECT_FALSE(GrammarMatches(grammar, "10000000000000000"));
}

struct NumberCase {
  std::optional<NumberBound> lo, hi;
};

// Numbers -I.F with I in [0, 30] and fractions .0, .00, .05, .5, .99: accepted exactly when
// within the bounds, except a zero fraction at an inclusive bound (left out by design).
TEST(NumberRangeExprTest, AcceptsExactlyTheNumbersWithinTheBounds) {
  const std::vector<NumberCase> cases = {
      {NumberBound{0, false}, NumberBound{1, false}},  {NumberBound{0, true}, NumberBound{1, false}},
      {NumberBound{0, true}, NumberBound{1, true}},    {NumberBound{-3, false}, NumberBound{2, true}},
      {NumberBound{-3, true}, std::nullopt},           {std::nullopt, NumberBound{-2, true}},
      {std::nullopt, NumberBound{0, false}},           {NumberBound{5, false}, NumberBound{5, false}},
      {NumberBound{-10, true}, NumberBound{-9, true}}, {NumberBound{7, false}, NumberBound{20, false}},
  };
  const char* fractions[] = {"", ".0", ".00", ".05", ".5", ".99"};
  const double fraction_values[] = {0, 0, 0, 0.05, 0.5, 0.99};
  for (const NumberCase& c : cases) {
    const Grammar grammar = GrammarOf(NumberRangeExpr(c.lo, c.hi));
    for (int sign : {1, -1}) {
      for (int i = 0; i <= 30; ++i) {
        for (int f = 0; f < 6; ++f) {
          const std::string text = (sign < 0 ? "-" : "") + std::to_string(i) + fractions[f];
          if (text == "-0") continue;  // not canonical: never generated
          const double v = sign * (i + fraction_values[f]);
          const bool above = !c.lo || (c.lo->exclusive ? v > c.lo->value : v >= c.lo->value);
          const bool below = !c.hi || (c.hi->exclusive ? v < c.hi->value : v <= c.hi->value);
          const bool zero_fraction_at_bound =
              f > 0 && f < 3 && ((c.lo && v == c.lo->value) || (c.hi && v == c.hi->value));
          SCOPED_TRACE(text);
          if (zero_fraction_at_bound) continue;
          EXPECT_EQ(GrammarMatches(grammar, text), above && below);
        }
      }
    }
    EXPECT_FALSE(GrammarMatches(grammar, "1e0"));
  }
}

}  // namespace
}  // namespace tandem
