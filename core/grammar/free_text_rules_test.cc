#include "core/grammar/free_text_rules.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/special_token.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using E = GrammarExpr;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// The grammar of free text with `markers`, each followed by "!" when it may appear.
Grammar TextGrammar(const std::vector<TextMarker>& markers, const FreeTextOptions& options = {}) {
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  absl::StatusOr<GrammarExpr> text = AddFreeTextRules(builder, "text", markers, options);
  EXPECT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(builder.DefineRule(root, *text).ok());
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_TRUE(grammar.ok()) << grammar.status();
  return *grammar;
}

struct Case {
  std::string text;
  bool matches;
};

void ExpectMatches(const Grammar& grammar, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(GrammarMatches(grammar, c.text), c.matches) << "'" << c.text << "'";
  }
}

TEST(FreeTextRulesTest, TextWithoutASelfOverlappingMarker) {
  ExpectMatches(TextGrammar({{"aab", std::nullopt}}),
                {{"", true},
                 {"aaa", true},
                 {"aaab", false},  // "aab" starts one character after the first 'a'
                 {"aab", false},
                 {"abaab", false},
                 {"ab aab", false},
                 {"ab a ab aaa", true},
                 {"aaaaaaaaaaaaaaaaaa b", true},
                 {"aabx", false},
                 {"xaa", true}});
}

TEST(FreeTextRulesTest, TextWithoutAPeriodicMarker) {
  ExpectMatches(
      TextGrammar({{"abab", std::nullopt}}),
      {{"aba", true}, {"ababa", false}, {"abaabab", false}, {"abaaba", true}, {"abbab", true}});
}

TEST(FreeTextRulesTest, MarkerFollowsOnlyWhereItIsTheFirstOccurrence) {
  // "abab!" after text T is allowed only if T + "abab" first holds "abab" at its end.
  const Grammar grammar = TextGrammar({{"abab", E::Literal("!")}});
  ExpectMatches(grammar, {{"abab!", true},
                          {"x abab!", true},
                          {"ab"
                           "abab!",
                           false},  // "ababab": the first "abab" starts at 0
                          {"a"
                           "abab!",
                           true},  // "aabab": first at 1, where the marker starts
                          {"aba"
                           "abab!",
                           true},                 // "abaabab": first at 3
                          {"abab", false},        // the marker without what follows
                          {"abab!abab!", false},  // the free text is over after the marker
                          {"abab!x", false}});
}

TEST(FreeTextRulesTest, MarkerWithUtf8AndControlTokenForms) {
  const std::string marker = "<｜tool▁calls▁begin｜>";
  const Grammar grammar = TextGrammar({{marker, E::Literal("X")}});
  ExpectMatches(grammar, {{"héllo " + marker + "X", true},
                          {"héllo " + SpecialTokenBytes(marker) + "X", true},
                          {"<｜tool▁calls" + marker + "X", true},
                          {marker + marker + "X", false},
                          {"héllo", true},
                          {"<｜tool▁calls▁begin", true}});
  const Grammar text_only = TextGrammar({{marker, E::Literal("X"), /*also_special=*/false}});
  EXPECT_FALSE(GrammarMatches(text_only, SpecialTokenBytes(marker) + "X"));
}

TEST(FreeTextRulesTest, SeveralMarkersEachWithItsContinuation) {
  const Grammar grammar =
      TextGrammar({{"Action:", E::Literal("1"), false}, {"<|A|>", E::Literal("2")}});
  ExpectMatches(grammar, {{"text Action:1", true},
                          {"text Action:2", false},
                          {"text <|A|>2", true},
                          {"text <|A|>1", false},
                          {"Action <|A| Act", true},
                          {"Action:", false},
                          {"<|A|>", false}});
}

TEST(FreeTextRulesTest, NeverAllowsAControlTokenItDoesNotName) {
  const Grammar grammar = TextGrammar({{"</s>", std::nullopt}});
  EXPECT_FALSE(GrammarMatches(grammar, "a" + SpecialTokenBytes("<|eot|>")));
  EXPECT_FALSE(GrammarMatches(grammar, "a\xFF"));
  FreeTextOptions options;
  options.special_tokens = {"<|eot|>", "</s"};
  const Grammar with_tokens = TextGrammar({{"</s>", std::nullopt}}, options);
  EXPECT_TRUE(GrammarMatches(with_tokens, "a" + SpecialTokenBytes("<|eot|>") + "b"));
  // A control token is read as its text: "</s" then ">" completes the marker.
  EXPECT_FALSE(GrammarMatches(with_tokens, SpecialTokenBytes("</s") + ">"));
  EXPECT_TRUE(GrammarMatches(with_tokens, SpecialTokenBytes("</s") + "x>"));
}

TEST(FreeTextRulesTest, MayEndOnlyWhenAllowed) {
  FreeTextOptions options;
  options.may_end = false;
  const Grammar grammar = TextGrammar({{"</think>", E::Literal("ok")}}, options);
  ExpectMatches(grammar, {{"", false},
                          {"thinking", false},
                          {"thinking</think>ok", true},
                          {"</think>ok", true},
                          {"</think>", false}});
}

TEST(FreeTextRulesTest, RefusesAnEmptyOrInvalidMarker) {
  GrammarBuilder builder;
  EXPECT_THAT(AddFreeTextRules(builder, "text", {{"", std::nullopt}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(AddFreeTextRules(builder, "text", {{"a\xC0", std::nullopt}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("marker")));
}

}  // namespace
}  // namespace tandem
