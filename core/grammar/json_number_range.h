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

// The longest integer part the grammars write (and the exponent at most 2 digits), so every
// number they accept is finite as a double (JSON parsers refuse or overflow past 1.8e308).
inline constexpr int32_t kMaxIntegerDigits = 64;

// A bounded number's fraction has at most this many digits, and its exclusive bounds are
// below kMaxExclusiveNumberBound in magnitude: then a number strictly inside an open bound
// stays strictly inside once a parser rounds it to a double (the spacing of doubles there is
// below 2^-21, finer than 10^-6).
inline constexpr int32_t kMaxFractionDigits = 6;
inline constexpr int64_t kMaxExclusiveNumberBound = int64_t{1} << 31;

// The integers in [lo, hi] in canonical decimal (no leading zeros, no "-0"); nullopt is an
// open end (at most kMaxIntegerDigits digits). Requires |lo|, |hi| <= kMaxExactBound and lo <= hi.
GrammarExpr IntegerRangeExpr(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A bound of a number range: an integer value, inclusive or exclusive.
struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// JSON numbers without exponent (-?int(.digits)?, at most kMaxFractionDigits) whose value lies within the bounds (nullopt:
// open), the integers among them with no fraction. Some valid spellings are left out ("3.0"
// when 3 is the inclusive maximum). Requires a non-empty range and |value| <= kMaxExactBound.
GrammarExpr NumberRangeExpr(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_JSON_NUMBER_RANGE_H_
