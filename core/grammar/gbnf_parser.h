// The GBNF front end: llama.cpp's grammar format, parsed into GrammarExprs (grammar_expr.h)
// and lowered by a GrammarBuilder (grammar_builder.h). The start rule is `root`.
//
//   # comments run to the end of the line
//   root   ::= "n=" digits ("," digits)*
//   digits ::= [0-9]{1,3}
//
// What the format has, as llama.cpp reads it:
//  - rules `name ::= body`, names of letters, digits, '-' and '_'; a rule ends at a newline,
//    except inside parentheses or right after `::=` or `|` (there the body goes on);
//  - alternatives `|`, sequences, groups `( )`, and after any item `*`, `+`, `?`, `{m}`,
//    `{m,}`, `{m,n}` (stacked repetitions nest: `x{2}{3}` is six x);
//  - literals "..." and classes [...] / [^...] of code points, ranges `a-z`, `.` (any code
//    point); escapes \n \t \r \\ \" \[ \] \- and \xHH \uHHHH \UHHHHHHHH, which name code
//    points (so "\xe9" is U+00E9, matched as its two UTF-8 bytes), never surrogates or values
//    past U+10FFFF.
//
// Refused with kInvalidArgument, the message naming the line and column (1-based, columns in
// code points) and what was expected: text that is not UTF-8 or longer than kMaxGbnfBytes, a
// syntax error, an unknown or malformed escape, an unterminated literal or class, an empty or
// reversed class range, a rule defined twice, a reference to a rule that is never defined, a
// missing `root`, a repetition count past GrammarLimits::max_repeat (or a maximum below its
// minimum), nesting past GrammarLimits::max_nesting, and llama.cpp's token references
// (`<[123]>`, `<think>`, `!<...>`), which match token ids, not text, and are not supported.
#ifndef TANDEM_CORE_GRAMMAR_GBNF_PARSER_H_
#define TANDEM_CORE_GRAMMAR_GBNF_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_builder.h"

namespace tandem {

// The longest GBNF text accepted, in bytes (1 MiB).
inline constexpr size_t kMaxGbnfBytes = size_t{1} << 20;

// Parses a GBNF grammar and builds it with `limits`; the start rule is `root`.
absl::StatusOr<Grammar> ParseGbnf(absl::string_view text, const GrammarLimits& limits = {});

// Adds the rules `text` defines to `builder`, for front ends and tools that embed GBNF.
// `rules_by_name` maps rule names to builder ids: a name already in it is that rule (so the
// text may reference, or define, rules the caller declared); new names are declared with
// builder.AddRule and added. A rule the text references but nobody defines is left for the
// caller (Build refuses it), as is `root`. `limits` bound repetition counts and nesting as in
// ParseGbnf (pass the builder's).
absl::Status AddGbnfRules(absl::string_view text, GrammarBuilder& builder,
                          absl::flat_hash_map<std::string, int32_t>* rules_by_name,
                          const GrammarLimits& limits = {});

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GBNF_PARSER_H_
