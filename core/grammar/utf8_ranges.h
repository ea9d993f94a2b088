// Code point ranges as UTF-8 byte sequences: each result is one sequence of byte ranges
// (1 to 4 of them) whose concatenation is exactly the UTF-8 encodings of a sub-range of code
// points, and together the sequences cover every code point of the input (surrogates never).
// The classic construction: split a range where the encoded length changes, then where a
// trailing byte does not span its full 80..BF, until every byte position is a plain range.
#ifndef TANDEM_CORE_GRAMMAR_UTF8_RANGES_H_
#define TANDEM_CORE_GRAMMAR_UTF8_RANGES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/grammar/grammar_expr.h"

namespace tandem {

// A run of byte ranges: byte i of the encoding is in [ranges[i].first, ranges[i].second].
using Utf8Sequence = std::vector<std::pair<uint8_t, uint8_t>>;

// The ranges (or, `negated`, the code points not in them) sorted, merged, clipped to
// 0..0x10FFFF and without surrogates.
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated);

// The UTF-8 sequences of normalized ranges (NormalizeRanges' output).
std::vector<Utf8Sequence> Utf8Sequences(const std::vector<CodepointRange>& normalized);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_UTF8_RANGES_H_
