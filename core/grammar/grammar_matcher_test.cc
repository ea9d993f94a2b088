#include "core/grammar/grammar_matcher.h"

#include <functional>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/grammar_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using E = GrammarExpr;
using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;

struct MatchCase {
  std::string name;
  // Builds the grammar; returns the root.
  std::function<int32_t(GrammarBuilder&)> build;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

int32_t Single(GrammarBuilder& b, GrammarExpr body) {
  const int32_t root = b.AddRule("root");
  EXPECT_THAT(b.DefineRule(root, std::move(body)), IsOk());
  return root;
}

std::vector<MatchCase> Cases() {
  return {
      {"literal", [](GrammarBuilder& b) { return Single(b, E::Literal("abc")); },
       {"abc"}, {"", "ab", "abcd", "abd"}},
      {"empty", [](GrammarBuilder& b) { return Single(b, E::Empty()); }, {""}, {"a"}},
      {"choice", [](GrammarBuilder& b) {
         return Single(b, E::Choice({E::Literal("cat"), E::Literal("car"), E::Empty()}));
       },
       {"cat", "car", ""}, {"ca", "cart"}},
      {"ascii class", [](GrammarBuilder& b) { return Single(b, E::CharClass({{'a', 'c'}})); },
       {"a", "b", "c"}, {"d", "", "ab"}},
      {"negated class excludes its ranges and accepts any other code point",
       [](GrammarBuilder& b) { return Single(b, E::CharClass({{'"', '"'}}, true)); },
       {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", std::string(1, '\0')},
       {"\"", "", "\xC3", "\xED\xA0\x80" /* a surrogate */, "\xC0\x80" /* overlong */}},
      {"unicode range", [](GrammarBuilder& b) {
         return Single(b, E::CharClass({{0x3B1, 0x3C9}}));  // Greek small letters
       },
       {"\xCE\xB1", "\xCF\x89"}, {"a", "\xCE\xB0", "\xCF\x8A"}},
      {"any char", [](GrammarBuilder& b) { return Single(b, E::AnyChar()); },
       {"x", "\xF4\x8F\xBF\xBF"}, {"\xF4\x90\x80\x80", "\xFF", "xy"}},
      {"star", [](GrammarBuilder& b) { return Single(b, E::Repeat(E::Literal("ab"), 0, kUnbounded)); },
       {"", "ab", "abababab"}, {"a", "aba", "ba"}},
      {"bounded repeat", [](GrammarBuilder& b) { return Single(b, E::Repeat(E::CharClass({{'0', '9'}}), 2, 4)); },
       {"12", "123", "1234"}, {"1", "12345", "1a"}},
      {"exact repeat", [](GrammarBuilder& b) { return Single(b, E::Repeat(E::Literal("x"), 3, 3)); },
       {"xxx"}, {"xx", "xxxx"}},
      {"star of a nullable item", [](GrammarBuilder& b) {
         return Single(b, E::Sequence({E::Repeat(E::Repeat(E::Literal("a"), 0, kUnbounded), 0, kUnbounded),
                                       E::Literal("b")}));
       },
       {"b", "ab", "aaaab"}, {"", "a", "ba"}},
      {"right recursion", [](GrammarBuilder& b) {
         // list ::= "x" ("," list)?
         const int32_t list = b.AddRule("list");
         EXPECT_THAT(b.DefineRule(list, E::Sequence({E::Literal("x"),
                                                    E::Optional(E::Sequence({E::Literal(","), E::Rule(list)}))})),
                     IsOk());
         return list;
       },
       {"x", "x,x", "x,x,x,x"}, {"", "x,", ",x", "xx"}},
      {"nested recursion", [](GrammarBuilder& b) {
         // value ::= "[" (value ("," value)*)? "]" | "0"
         const int32_t value = b.AddRule("value");
         E items = E::Sequence({E::Rule(value),
                                E::Repeat(E::Sequence({E::Literal(","), E::Rule(value)}), 0, kUnbounded)});
         EXPECT_THAT(b.DefineRule(value, E::Choice({E::Sequence({E::Literal("["), E::Optional(items), E::Literal("]")}),
                                                     E::Literal("0")})),
                     IsOk());
         return value;
       },
       {"0", "[]", "[0]", "[0,[0,[]],0]", "[[[[[[0]]]]]]"}, {"[", "[0,]", "[[0]", "00"}},
      {"ambiguous", [](GrammarBuilder& b) {
         return Single(b, E::Repeat(E::Choice({E::Literal("a"), E::Literal("a"), E::Literal("aa")}), 1, kUnbounded));
       },
       {"a", std::string(40, 'a')}, {"", "ab"}},
  };
}

TEST(GrammarMatcherTest, AcceptsExactlyTheSentences) {
  for (const MatchCase& c : Cases()) {
    GrammarBuilder builder;
    const int32_t root = c.build(builder);
    absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
    ASSERT_THAT(grammar, IsOk()) << c.name;
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(GrammarMatches(*grammar, text)) << c.name << ": " << text;
    }
    for (const std::string& text : c.rejected) {
      EXPECT_FALSE(GrammarMatches(*grammar, text)) << c.name << ": " << text;
    }
  }
}

TEST(GrammarMatcherTest, EqualInputsGiveEqualStates) {
  GrammarBuilder builder;
  const int32_t root = Single(builder, E::Repeat(E::Literal("ab"), 0, kUnbounded));
  ASSERT_OK_AND_ASSIGN(Grammar grammar, std::move(builder).Build(root));
  GrammarMatcher m(grammar);
  MatcherState s = m.Start();
  const MatcherState start = s;
  ASSERT_TRUE(m.Advance(s, 'a', &s));
  ASSERT_TRUE(m.Advance(s, 'b', &s));
  EXPECT_EQ(s, start);  // right recursion is a tail call: the stacks do not grow
  EXPECT_TRUE(m.CanEnd(s));
  EXPECT_TRUE(m.CanContinue(s));
  EXPECT_TRUE(m.NextBytes(s).Contains('a'));
  EXPECT_FALSE(m.NextBytes(s).Contains('b'));
}

TEST(GrammarMatcherTest, DeepNestingOverflowsInsteadOfGrowingWithoutBound) {
  GrammarBuilder builder;
  const int32_t value = builder.AddRule("value");
  ASSERT_THAT(builder.DefineRule(value, E::Choice({E::Sequence({E::Literal("["), E::Rule(value), E::Literal("]")}),
                                                   E::Literal("0")})),
              IsOk());
  ASSERT_OK_AND_ASSIGN(Grammar grammar, std::move(builder).Build(value));
  GrammarMatcher m(grammar);
  MatcherState s = m.Start();
  bool ok = true;
  for (int i = 0; i < GrammarMatcher::kMaxDepth + 10 && ok; ++i) ok = m.Advance(s, '[', &s);
  EXPECT_FALSE(ok);
  EXPECT_TRUE(m.overflowed());
}

}  // namespace
}  // namespace tandem
