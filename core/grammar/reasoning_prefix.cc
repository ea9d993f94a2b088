#include "core/grammar/reasoning_prefix.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/free_text_rules.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/special_token.h"

namespace tandem {
namespace {

// The reasoning part, ending in a reference to rule `constrained`.
absl::StatusOr<GrammarExpr> ReasoningExpr(GrammarBuilder& builder, ReasoningPrefix reasoning,
                                          int32_t constrained) {
  GrammarExpr after = GrammarExpr::Sequence(
      {GrammarExpr::Repeat(GrammarExpr::CharClass({{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}}), 0,
                           kReasoningGapWhitespace),
       GrammarExpr::Rule(constrained)});
  FreeTextOptions options;
  options.may_end = false;
  ASSIGN_OR_RETURN(
      GrammarExpr thinking,
      AddFreeTextRules(builder, "reasoning", {{"</think>", std::move(after)}}, options));
  if (reasoning == ReasoningPrefix::kInPrompt) return thinking;
  return GrammarExpr::Choice(
      {GrammarExpr::Sequence({TextOrSpecialToken("<think>"), std::move(thinking)}),
       GrammarExpr::Rule(constrained)});
}

// `prefix` with `constrained` appended and every reference to rule `placeholder` pointed at
// its root.
Grammar Splice(Grammar prefix, int32_t placeholder, const Grammar& constrained) {
  const auto rule_offset = static_cast<int32_t>(prefix.rules.size());
  const auto set_offset = static_cast<int32_t>(prefix.byte_sets.size());
  const auto code_offset = static_cast<int32_t>(prefix.code.size());
  for (int32_t& element : prefix.code) {
    if (element == placeholder) element = constrained.root + rule_offset;
  }
  for (int32_t element : constrained.code) {
    if (IsRuleRef(element)) {
      element += rule_offset;
    } else if (IsByteSet(element)) {
      element = ByteSetElement(ByteSetIndex(element) + set_offset);
    }
    prefix.code.push_back(element);
  }
  for (const std::vector<int32_t>& starts : constrained.rules) {
    std::vector<int32_t>& moved = prefix.rules.emplace_back();
    for (int32_t start : starts) moved.push_back(start + code_offset);
  }
  prefix.rule_names.insert(prefix.rule_names.end(), constrained.rule_names.begin(),
                           constrained.rule_names.end());
  prefix.byte_sets.insert(prefix.byte_sets.end(), constrained.byte_sets.begin(),
                          constrained.byte_sets.end());
  return prefix;
}

}  // namespace

absl::StatusOr<Grammar> WithReasoningPrefix(Grammar constrained, ReasoningPrefix reasoning) {
  if (reasoning == ReasoningPrefix::kNone) return constrained;
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  // Stands for the constrained grammar until Splice: a rule that consumes a byte (so the
  // builder keeps every reference to it) of a byte no UTF-8 text holds.
  const int32_t placeholder = builder.AddRule("constrained");
  RETURN_IF_ERROR(builder.DefineRule(placeholder, GrammarExpr::Literal("\xFE")));
  ASSIGN_OR_RETURN(GrammarExpr body, ReasoningExpr(builder, reasoning, placeholder));
  RETURN_IF_ERROR(builder.DefineRule(root, std::move(body)));
  ASSIGN_OR_RETURN(Grammar prefix, std::move(builder).Build(root));
  Grammar spliced = Splice(std::move(prefix), placeholder, constrained);
  const GrammarLimits limits;
  if (static_cast<int64_t>(spliced.rules.size()) > limits.max_rules ||
      static_cast<int64_t>(spliced.code.size()) > limits.max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the constraint behind the reasoning is past the grammar limits (", spliced.rules.size(),
        " rules, ", spliced.code.size(), " elements; max_rules=", limits.max_rules,
        ", max_elements=", limits.max_elements, ")"));
  }
  return spliced;
}

}  // namespace tandem
