#include "core/grammar/repeat_chains.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/gbnf_parser.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

Grammar Parse(const std::string& gbnf) {
  absl::StatusOr<Grammar> g = ParseGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Grammar();
}

// The levels of the rules named `name`, in rule order.
std::vector<int32_t> Levels(const Grammar& g, const RepeatChains& chains, const std::string& name) {
  std::vector<int32_t> levels;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (g.rule_names[r] == name) levels.push_back(chains.level(static_cast<int32_t>(r)));
  }
  return levels;
}

TEST(RepeatChainsTest, ABoundedRepetitionIsAChainOfLevelsUnderItsTop) {
  const Grammar g = Parse("root ::= \"x\" w{0,4} \"y\"\nw ::= \"ab\" | [0-9]");
  const RepeatChains chains(g);
  EXPECT_EQ(Levels(g, chains, "optional"), (std::vector<int32_t>{1, 2, 3, 4}));
  int32_t top = -1;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (chains.level(static_cast<int32_t>(r)) == 4) top = static_cast<int32_t>(r);
  }
  ASSERT_GE(top, 0);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    const int32_t rule = static_cast<int32_t>(r);
    if (chains.level(rule) == 0) continue;
    EXPECT_EQ(chains.top(rule), top) << g.rule_names[r];
    // Every position maps to the top's same alternative and offset.
    for (size_t a = 0; a < g.rules[r].size(); ++a) {
      for (int32_t pos = g.rules[r][a], o = 0; g.code[pos] != kEndOfAlternative; ++pos, ++o) {
        EXPECT_EQ(chains.ToTop(pos), g.rules[top][a] + o);
      }
    }
  }
  EXPECT_EQ(chains.level(g.root), 0);
}

TEST(RepeatChainsTest, LoopsStarsAndUnlikeLevelsAreNoChains) {
  // A loop of two rules, a star (a rule that refers to itself) and a rule whose "next" has
  // other items.
  const Grammar g = Parse(
      "root ::= a \"|\" s \"|\" p\n"
      "a ::= \"x\" b | \"\"\nb ::= \"x\" a | \"\"\n"
      "s ::= \"x\" s | \"\"\n"
      "p ::= \"x\" q | \"\"\nq ::= \"z\" | \"\"");
  const RepeatChains chains(g);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    EXPECT_EQ(chains.level(static_cast<int32_t>(r)), 0) << g.rule_names[r];
  }
}

TEST(RepeatChainsTest, NestedRepetitionsAreSeparateChains) {
  const Grammar g = Parse("root ::= (\"[\" [ab]{0,2} \"]\"){0,3}");
  const RepeatChains chains(g);
  std::vector<int32_t> levels = Levels(g, chains, "optional");
  std::sort(levels.begin(), levels.end());
  EXPECT_EQ(levels, (std::vector<int32_t>{1, 1, 2, 2, 3}));
  std::vector<int32_t> tops;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (chains.level(static_cast<int32_t>(r)) > 0) tops.push_back(chains.top(static_cast<int32_t>(r)));
  }
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  EXPECT_EQ(tops.size(), 2u);
}

}  // namespace
}  // namespace tandem
