// Exact grammars of bounded JSON numbers, for the JSON Schema compiler's minimum / maximum /
// exclusiveMinimum / exclusiveMaximum: integer ranges as digit grammars (the classic
// range-to-regex construction: split by digit count, then by leading digit), and numbers
// with a fraction whose value stays within integer bounds. Internal to core/grammar.
#ifndef TANDEM_CORE_GRAMMAR_JSON_NUMBER_RANGE_H_
#define TANDEM_CORE_GRAMMAR_JSON_NUMBER_RANGE_H_

#include <cstdint>
#include <optional>

#include "core/grammar/grammar_expr.h"

namespace tandem {

// Bounds past this magnitude are refused by the compiler (JSON numbers lose precision).
inline constexpr int64_t kMaxExactBound = int64_t{1} << 53;

// The integers in [lo, hi] in canonical decimal (no leading zeros, no "-0"); nullopt is an
// open end. Requires |lo|, |hi| <= kMaxExactBound and lo <= hi.
GrammarExpr IntegerRangeExpr(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A bound of a number range: an integer value, inclusive or exclusive.
struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// JSON numbers without exponent (-?int(.digits)?) whose value lies within the bounds (nullopt:
// open), the integers among them with no fraction. Some valid spellings are left out ("3.0"
// when 3 is the inclusive maximum). Requires a non-empty range and |value| <= kMaxExactBound.
GrammarExpr NumberRangeExpr(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_JSON_NUMBER_RANGE_H_
