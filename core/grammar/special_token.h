// Control tokens as grammar terminals.
//
// A control token (Mistral's [TOOL_CALLS], Llama's <|python_tag|>, Command-R7B's
// <|START_ACTION|>) is not text: a grammar over text never allows it. To let a grammar name
// one, the constraint vocabulary (compiled_constraint.h, ConstraintBytesOf) gives each control
// token that does not end the output the bytes SpecialTokenBytes(its text): 0xFF, the text,
// 0xFF. No UTF-8 text holds byte 0xFF, and the front ends (GBNF, regular expressions, JSON
// Schema, free text) write only UTF-8, so a control token is allowed exactly where a grammar
// writes SpecialTokenLiteral(its text). Tokens whose own bytes hold 0xFF (a byte-fallback
// <0xFF>, a byte-level token for byte 0xFF) are never allowed: no UTF-8 output contains them.
//
//   GrammarExpr::Sequence({SpecialTokenLiteral("[TOOL_CALLS]"), GrammarExpr::Literal("[")})
#ifndef TANDEM_CORE_GRAMMAR_SPECIAL_TOKEN_H_
#define TANDEM_CORE_GRAMMAR_SPECIAL_TOKEN_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {

// The byte around a control token's text in its constraint bytes; never part of UTF-8.
inline constexpr char kSpecialTokenMark = '\xFF';

// The constraint bytes of the control token whose text is `text` (empty for an empty text).
inline std::string SpecialTokenBytes(absl::string_view text) {
  if (text.empty()) return std::string();
  return absl::StrCat(absl::string_view(&kSpecialTokenMark, 1), text,
                      absl::string_view(&kSpecialTokenMark, 1));
}

// The grammar terminal that matches the control token whose text is `text` (non-empty).
inline GrammarExpr SpecialTokenLiteral(absl::string_view text) {
  return GrammarExpr::Literal(SpecialTokenBytes(text));
}

// `text` written as text (or an added, non-control token) or as the control token of that
// text: a family marker that is a control token in some vocabularies and text in others
// (DeepSeek's <｜tool▁calls▁begin｜>, Mistral's [TOOL_CALLS]).
inline GrammarExpr TextOrSpecialToken(absl::string_view text) {
  return GrammarExpr::Choice({GrammarExpr::Literal(std::string(text)), SpecialTokenLiteral(text)});
}

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_SPECIAL_TOKEN_H_
