// Free text that stops at markers: the rules of any UTF-8 text that contains none of a few
// marker strings, and that may end the output anywhere, or continue, once, with a marker and
// what follows it. The lazy tool-call grammars (tool_call_grammar.h: text until the family's
// call marker, then the calls) and the reasoning prefix (reasoning_prefix.h: text until
// "</think>") are made of it.
//
//   GrammarBuilder builder;
//   ASSIGN_OR_RETURN(GrammarExpr text, AddFreeTextRules(builder, "content",
//       {{"<tool_call>", GrammarExpr::Rule(calls)}}));
//
// The rules are the states of a string matcher (Aho-Corasick over code points; one marker is
// Knuth-Morris-Pratt): a state is the longest end of the text so far that begins a marker, and
// a character that would complete a marker is refused. A marker may follow the text only
// where the text plus the marker holds its first marker at the marker's start ("aa" then
// "aab" is refused: "aaab" holds "aab" one character earlier), so a parser that splits the
// output at the first marker splits it where the grammar did. Right-recursive: one rule per
// state, a state's alternatives one per next state, so stacks stay flat however long the text.
//
// Thread-safe: plain functions.
#ifndef TANDEM_CORE_GRAMMAR_FREE_TEXT_RULES_H_
#define TANDEM_CORE_GRAMMAR_FREE_TEXT_RULES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {

struct TextMarker {
  std::string text;  // non-empty UTF-8
  // What follows the marker (the free text is then over); nullopt: the marker never appears.
  // Referenced once per state: pass a rule (GrammarExpr::Rule) for anything large.
  std::optional<GrammarExpr> then;
  // The marker may also be the control token of that text (special_token.h).
  bool also_special = true;
};

struct FreeTextOptions {
  // The output may end anywhere in the text; false: only a marker's `then` ends it.
  bool may_end = true;
  // Control tokens the text may hold (Command-R7B's <|START_THINKING|>), read as their text
  // by the marker matcher.
  std::vector<std::string> special_tokens;
};

// Adds the rules to `builder` (named `name` and its states) and returns the start state.
// kInvalidArgument for an empty marker or one that is not UTF-8.
absl::StatusOr<GrammarExpr> AddFreeTextRules(GrammarBuilder& builder, absl::string_view name,
                                             const std::vector<TextMarker>& markers,
                                             const FreeTextOptions& options = {});

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_FREE_TEXT_RULES_H_
