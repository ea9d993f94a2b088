// Regular expressions as grammars: the syntax of ECMAScript (and so of JSON Schema's `pattern`,
// read as with the `u` flag) compiled to a GrammarExpr whose sentences are exactly the strings
// the expression matches in full.
//
//   ASSIGN_OR_RETURN(Grammar grammar, CompileRegex(R"(^\d{4}-\d{2}-\d{2}$)"));
//
// Supported: literals (any UTF-8 text); escapes \n \r \t \f \v \0 \cX \xHH \uHHHH (a
// surrogate pair \uD83D\uDE00 is one code point) \u{H...} and any escaped ASCII punctuation;
// `.` (any code point but the line terminators \n \r U+2028 U+2029); classes [...] and [^...]
// with ranges and escapes ([\b] is backspace); \d \D \w \W \s \S as ECMAScript defines them (\s:
// U+0009..U+000D, U+0020, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000, U+FEFF); alternation; groups ( ), (?: ) and (?<name> ) (all plain groups);
// quantifiers * + ? {m} {m,} {m,n} and their lazy forms (laziness does not change which
// strings match); `^` at the start and `$` at the end of the pattern or of one of its top-level
// alternatives (no-ops: the whole text must match anyway).
//
// Refused with kInvalidArgument naming the construct and its byte offset: backreferences (\1,
// \k<name>), lookaround ((?= (?! (?<= (?<!), word boundaries (\b \B), inline flags and
// modifiers ((?i) ...), Unicode property escapes (\p{..} \P{..}), unknown escapes (\a, \z ...),
// anchors anywhere else, lone surrogates, a quantifier with nothing to repeat, unbalanced
// brackets, a lone `{` or `}` or `]`, invalid UTF-8, and a pattern past a limit: its length
// (kMaxRegexBytes), group nesting and expression depth (GrammarLimits::max_nesting), a
// repetition count (max_repeat), and estimates of what the builder will count against
// max_elements and max_rules, which multiply through nested counted repetitions
// ((a{1000}){1000}) and through the builder's non-empty forms under a star, so a blow-up is
// refused at the construct's offset before anything is expanded (the builder's own count stays
// the final check, and names the limit).
//
// Linear: the parser reads the pattern once; alternation and repetition stay GrammarExprs (no
// alternative is expanded combinatorially), so matching is the matcher's NFA simulation.
#ifndef TANDEM_CORE_GRAMMAR_REGEX_COMPILER_H_
#define TANDEM_CORE_GRAMMAR_REGEX_COMPILER_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {

// The longest pattern accepted, in bytes.
inline constexpr size_t kMaxRegexBytes = 64 * 1024;

struct RegexOptions {
  // false: the whole text must match (as if anchored ^...$; what `regex` constraints mean).
  // true: JSON Schema's `pattern` semantics: the pattern may match anywhere in the text, so a
  // top-level alternative not starting with `^` may be preceded by any text and one not
  // ending with `$` followed by any text.
  bool search = false;
  // The limits the pattern is checked against: those of the builder it goes into (the
  // builder still checks its own totals, over every expression it is given).
  GrammarLimits limits;
};

// The grammar whose sentences are exactly the strings `pattern` matches in full.
absl::StatusOr<Grammar> CompileRegex(absl::string_view pattern, const GrammarLimits& limits = {});

// The same as an expression, for front ends that embed a regex (JSON Schema's `pattern`):
// `builder` is the grammar it goes into (the expression refers to no helper rule today).
absl::StatusOr<GrammarExpr> RegexToExpr(absl::string_view pattern, GrammarBuilder& builder,
                                        const RegexOptions& options = {});

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REGEX_COMPILER_H_
