#include "core/grammar/reasoning_prefix.h"

#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_grammar.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/special_token.h"
#include "core/grammar/tool_call_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct Case {
  std::string text;
  bool matches;
};

void ExpectMatches(const ConstraintSpec& spec, const std::vector<Case>& cases) {
  absl::StatusOr<Grammar> grammar = GrammarForSpec(spec);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  for (const Case& c : cases) {
    EXPECT_EQ(GrammarMatches(*grammar, c.text), c.matches)
        << ReasoningPrefixName(spec.reasoning) << ": '" << c.text << "'";
  }
}

TEST(ReasoningPrefixTest, InPromptConstrainsOnlyAfterTheReasoningEnds) {
  ExpectMatches({ConstraintSpec::Kind::kRegex, "[0-9]+", ReasoningPrefix::kInPrompt},
                {{"I think.\n</think>\n\n42", true},
                 {"</think>42", true},
                 {"a </think"
                  "</think>7",
                  true},
                 {"digits 123 are free here</think> \t\r\n9", true},
                 {"Hmm." + SpecialTokenBytes("</think>") + "\n1", true},
                 {"42", false},                   // the reasoning never ended
                 {"I think", false},              // nor here: the output may not end inside it
                 {"x</think>4</think>2", false},  // after the first </think>, only the regex
                 {"x</think>", false},
                 {"x</think>" + std::string(kReasoningGapWhitespace + 1, ' ') + "1", false}});
}

TEST(ReasoningPrefixTest, OptionalReasoningMayOpenTheOutput) {
  ExpectMatches({ConstraintSpec::Kind::kRegex, "[0-9]+", ReasoningPrefix::kOptional},
                {{"42", true},
                 {"<think>hmm, 6*7</think>\n42", true},
                 {SpecialTokenBytes("<think>") + "x" + SpecialTokenBytes("</think>") + "1", true},
                 {"<think>hmm", false},
                 {"hmm</think>42", false},
                 {"<think></think>", false}});
}

TEST(ReasoningPrefixTest, NoneLeavesTheGrammarAsItIs) {
  ASSERT_OK_AND_ASSIGN(Grammar plain, GrammarForSpec({ConstraintSpec::Kind::kRegex, "a|b"}));
  ASSERT_OK_AND_ASSIGN(Grammar direct, WithReasoningPrefix(plain, ReasoningPrefix::kNone));
  EXPECT_EQ(plain.DebugString(), direct.DebugString());
}

TEST(ReasoningPrefixTest, AppliesToEveryKind) {
  toolcall::ToolFunction f;
  f.name = "f";
  toolcall::ToolChoice required;
  required.mode = toolcall::ToolChoice::Mode::kRequired;
  const std::string tools = ToolCallSpecText(toolcall::ToolCallFormat::kDeepSeekR1, {f}, required);
  const std::string call =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  struct KindCase {
    ConstraintSpec spec;
    std::string constrained;
  };
  const std::vector<KindCase> cases = {
      {{ConstraintSpec::Kind::kJsonObject, ""}, R"({"a":1})"},
      {{ConstraintSpec::Kind::kJsonSchema, R"({"type": "integer"})"}, "12"},
      {{ConstraintSpec::Kind::kGrammar, R"(root ::= "yes" | "no")"}, "yes"},
      {{ConstraintSpec::Kind::kRegex, "[a-c]{2}"}, "ab"},
      {{ConstraintSpec::Kind::kToolCalls, tools}, call},
  };
  for (KindCase c : cases) {
    c.spec.reasoning = ReasoningPrefix::kInPrompt;
    ExpectMatches(c.spec, {{"Let me think.\n</think>\n\n" + c.constrained, true},
                           {c.constrained, false},
                           {"Let me think.</think>\n\n" + c.constrained + "!", false}});
  }
}

TEST(ReasoningPrefixTest, SpecsDifferingInReasoningAreDifferentConstraints) {
  const ConstraintSpec plain{ConstraintSpec::Kind::kRegex, "[0-9]+"};
  ConstraintSpec reasoning = plain;
  reasoning.reasoning = ReasoningPrefix::kOptional;
  EXPECT_FALSE(plain == reasoning);
  EXPECT_EQ(ReasoningPrefixName(ReasoningPrefix::kInPrompt), "in_prompt");
  EXPECT_EQ(ConstraintKindName(ConstraintSpec::Kind::kToolCalls), "tool_calls");
  auto vocab = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromBytes({"<think>", "</think>", "1", "2", "x", ""}, {5}));
  ConstraintCache cache(4);
  ASSERT_OK_AND_ASSIGN(auto a, cache.Get(plain, vocab));
  ASSERT_OK_AND_ASSIGN(auto b, cache.Get(reasoning, vocab));
  EXPECT_NE(a, b);
  TokenMask mask;
  NewTokenConstraint(a)->FillMask(&mask);
  EXPECT_FALSE(mask.Allowed(0));
  NewTokenConstraint(b)->FillMask(&mask);
  EXPECT_TRUE(mask.Allowed(0));
  EXPECT_TRUE(mask.Allowed(2));
  EXPECT_FALSE(mask.Allowed(1));
}

}  // namespace
}  // namespace tandem
