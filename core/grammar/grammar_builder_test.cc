#include "core/grammar/grammar_builder.h"

#include <functional>
#include <string>

#include "core/base/status_matchers.h"
#include "core/grammar/grammar_matcher.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using E = GrammarExpr;
using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

TEST(GrammarBuilderTest, RefusesAnUndefinedRuleNamingIt) {
  GrammarBuilder b;
  const int32_t root = b.AddRule("root");
  const int32_t missing = b.AddRule("missing");
  ASSERT_THAT(b.DefineRule(root, E::Rule(missing)), IsOk());
  EXPECT_THAT(std::move(b).Build(root),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'missing' is used but not defined")));
}

TEST(GrammarBuilderTest, RefusesAnUndefinedRoot) {
  GrammarBuilder b;
  const int32_t root = b.AddRule("root");
  EXPECT_THAT(std::move(b).Build(root),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'root' is not defined")));
}

TEST(GrammarBuilderTest, RefusesADoubleDefinition) {
  GrammarBuilder b;
  const int32_t root = b.AddRule("root");
  ASSERT_THAT(b.DefineRule(root, E::Literal("a")), IsOk());
  EXPECT_THAT(b.DefineRule(root, E::Literal("b")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'root' is defined twice")));
}

TEST(GrammarBuilderTest, RefusesLeftRecursionNamingTheRule) {
  struct Case {
    std::string name;
    std::function<int32_t(GrammarBuilder&)> build;
  };
  const std::vector<Case> cases = {
      {"direct", [](GrammarBuilder& b) {
         const int32_t expr = b.AddRule("expr");
         EXPECT_THAT(b.DefineRule(expr, E::Choice({E::Sequence({E::Rule(expr), E::Literal("+1")}), E::Literal("1")})), IsOk());
         return expr;
       }},
      {"hidden behind a nullable rule", [](GrammarBuilder& b) {
         const int32_t expr = b.AddRule("expr");
         const int32_t ws = b.AddRule("ws");
         EXPECT_THAT(b.DefineRule(ws, E::Repeat(E::Literal(" "), 0, kUnbounded)), IsOk());
         EXPECT_THAT(b.DefineRule(expr, E::Choice({E::Sequence({E::Rule(ws), E::Rule(expr), E::Literal("x")}), E::Literal("1")})), IsOk());
         return expr;
       }},
  };
  for (const Case& c : cases) {
    GrammarBuilder b;
    const int32_t root = c.build(b);
    EXPECT_THAT(std::move(b).Build(root),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("left recursion: rule 'expr'")))
        << c.name;
  }
}

TEST(GrammarBuilderTest, RefusesWhatIsPastALimitNamingIt) {
  {
    GrammarBuilder b;
    const int32_t root = b.AddRule("root");
    EXPECT_THAT(b.DefineRule(root, E::Repeat(E::Literal("a"), 0, 20000)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than the limit of 10000")));
  }
  {
    GrammarBuilder b;
    const int32_t root = b.AddRule("root");
    E deep = E::Literal("a");
    for (int i = 0; i < 300; ++i) deep = E::Sequence({std::move(deep)});
    EXPECT_THAT(b.DefineRule(root, std::move(deep)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nests deeper than 200")));
  }
  {
    GrammarBuilder b;
    const int32_t root = b.AddRule("root");
    // (a{1000}){1000}: a million elements after lowering.
    ASSERT_THAT(b.DefineRule(root, E::Repeat(E::Repeat(E::Literal("a"), 1000, 1000), 1000, 1000)), IsOk());
    EXPECT_THAT(std::move(b).Build(root),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 1000000 elements")));
  }
}

TEST(GrammarBuilderTest, ARepetitionOfARuleThatMatchesOnlyNothingLeavesEveryRuleAnAlternative) {
  // root ::= ("d" | e)+ "x";  e ::= ""   (found by gbnf_fuzzer)
  GrammarBuilder b;
  const int32_t root = b.AddRule("root");
  const int32_t e = b.AddRule("e");
  ASSERT_THAT(b.DefineRule(e, E::Empty()), IsOk());
  ASSERT_THAT(b.DefineRule(root, E::Sequence({E::Repeat(E::Choice({E::Literal("d"), E::Rule(e)}),
                                                         1, kUnbounded),
                                               E::Literal("x")})),
              IsOk());
  ASSERT_OK_AND_ASSIGN(Grammar g, std::move(b).Build(root));
  for (const std::vector<int32_t>& alternatives : g.rules) EXPECT_FALSE(alternatives.empty());
  for (const char* text : {"x", "dx", "dddx"}) EXPECT_TRUE(GrammarMatches(g, text)) << text;
  EXPECT_FALSE(GrammarMatches(g, "d"));
}

TEST(GrammarBuilderTest, ClassesShareOneHelperRule) {
  GrammarBuilder b;
  const int32_t root = b.AddRule("root");
  ASSERT_THAT(b.DefineRule(root, E::Sequence({E::AnyChar(), E::AnyChar()})), IsOk());
  ASSERT_OK_AND_ASSIGN(Grammar g, std::move(b).Build(root));
  EXPECT_EQ(g.rules.size(), 2u);  // root and one "char" rule
  EXPECT_TRUE(GrammarMatches(g, "\xE2\x82\xAC" "a"));
}

}  // namespace
}  // namespace tandem
