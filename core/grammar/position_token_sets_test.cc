#include "core/grammar/position_token_sets.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/grammar_constraint.h"
#include "core/grammar/return_positions.h"
#include "core/grammar/token_trie.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<std::string> TestTokens() {
  std::vector<std::string> bytes;
  for (int b = 1; b < 128; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"ab", "abc", "ba", "\"a", "a\"", "ab\",", "\",\"", "[a", "]]", "],[", "\\n",
                        "12", "2)", "(1", "  ", "\xC3\xA9", "\xC3", "\xA9\""}) {
    bytes.push_back(t);
  }
  return bytes;
}

const char* const kGrammars[] = {
    "root ::= \"[\" s (\",\" s){0,3} \"]\"\ns ::= \"\\\"\" c{0,5} \"\\\"\"\n"
    "c ::= [a-c] | \"\\\\\" [\"n] | [\\xC3] [\\xA9]",
    "root ::= item (\"\\n\" item)*\nitem ::= \"- \" [A-Za-z ,.']+ \" (\" [0-9]{1,3} \")\"",
    "root ::= x | \"(\" root \")\"\nx ::= [0-9]+ y?\ny ::= \"ab\" | \"a\" [bc]{0,2}",
};

// ComputeAll computes every (position, parent) pair a request can ask for: masks along random
// walks make no trie walk of their own.
TEST(PositionTokenSetsTest, ComputeAllLeavesNoWalkForRequests) {
  const std::vector<std::string> bytes = TestTokens();
  const TokenTrie trie(bytes);
  const std::vector<int32_t> no_ends;
  std::mt19937 rng(11);
  for (const char* gbnf : kGrammars) {
    ASSERT_OK_AND_ASSIGN(Grammar grammar, ParseGbnf(gbnf));
    PositionTokenSets sets(grammar, trie, bytes);
    ASSERT_GT(sets.ComputeAll(/*budget_seconds=*/1e9), 0);
    const int64_t walks = sets.walks();
    GrammarTables tables;
    tables.grammar = &grammar;
    tables.token_bytes = &bytes;
    tables.end_ids = &no_ends;
    tables.trie = &trie;
    tables.positions = &sets;
    for (int walk = 0; walk < 40; ++walk) {
      GrammarConstraint constraint(nullptr, tables, std::make_shared<SharedMatcher>(grammar));
      std::vector<int32_t> tokens;
      for (int step = 0; step < 30; ++step) {
        TokenMask mask;
        constraint.FillMask(&mask);
        std::vector<int32_t> allowed;
        for (int32_t t = 0; t < static_cast<int32_t>(bytes.size()); ++t) {
          if (mask.Allowed(t)) allowed.push_back(t);
        }
        if (allowed.empty()) break;
        tokens.push_back(allowed[rng() % allowed.size()]);
        ASSERT_OK(constraint.Sync(tokens));
      }
    }
    EXPECT_EQ(sets.walks(), walks) << gbnf;
  }
}

TEST(ReturnPositionsTest, ReferencesReturnAfterThemselvesAndTailCallsWhereTheirCallerDoes) {
  // root ::= "a" x "b" | y     y ::= "c" x     x ::= "d"
  ASSERT_OK_AND_ASSIGN(Grammar g, ParseGbnf("root ::= \"a\" x \"b\" | y\ny ::= \"c\" x\nx ::= \"d\""));
  const std::vector<std::vector<int32_t>> returns = ReturnPositions(g);
  int32_t x = -1, y = -1;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (g.rule_names[r] == "x") x = static_cast<int32_t>(r);
    if (g.rule_names[r] == "y") y = static_cast<int32_t>(r);
  }
  ASSERT_GE(x, 0);
  ASSERT_GE(y, 0);
  // x returns to the "b" after it in root, and (a tail call of y, itself a tail call of root)
  // to the bottom of the stack.
  const int32_t after_x = g.rules[g.root][0] + 2;
  EXPECT_EQ(returns[x], (std::vector<int32_t>{-1, after_x}));
  EXPECT_EQ(returns[y], (std::vector<int32_t>{-1}));
  EXPECT_EQ(returns[g.root], (std::vector<int32_t>{-1}));
}

}  // namespace
}  // namespace tandem
