#include "core/grammar/regex_piece.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/base/utf8.h"

namespace tandem {
namespace {

// Estimates saturate here, far past any limit, so they never overflow.
constexpr int64_t kSaturated = int64_t{1} << 60;

// A code point range becomes at most this many UTF-8 sequences (split where the encoded
// length changes, around the surrogates and where a trailing byte is partial)...
constexpr int64_t kSequencesPerRange = 9;
// ...each of up to 4 byte sets and an end of alternative.
constexpr int64_t kElementsPerSequence = 5;

int64_t Add(int64_t a, int64_t b) { return std::min(a + b, kSaturated); }

int64_t Mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : std::min(a * b, kSaturated);
}

}  // namespace

LoweredCost LoweredCost::operator+(const LoweredCost& other) const {
  return LoweredCost{Add(elements, other.elements), Add(rules, other.rules)};
}

LoweredCost LoweredCost::Times(int64_t n) const {
  return LoweredCost{Mul(elements, n), Mul(rules, n)};
}

LoweredCost ClassDefinitionCost(size_t ranges) {
  return LoweredCost{
      Mul(static_cast<int64_t>(ranges), kSequencesPerRange * kElementsPerSequence) + 1, 1};
}

RegexPiece RegexPiece::Empty() { return RegexPiece(); }

RegexPiece RegexPiece::Literal(uint32_t codepoint) {
  std::string bytes;
  utf8::Append(codepoint, &bytes);
  RegexPiece piece;
  piece.inline_elements = static_cast<int64_t>(bytes.size());
  piece.non_empty = piece.total();
  piece.nullable = false;
  piece.literal = true;
  piece.expr = GrammarExpr::Literal(std::move(bytes));
  return piece;
}

void RegexPiece::Extend(const RegexPiece& literal_piece) {
  expr.literal += literal_piece.expr.literal;
  inline_elements = Add(inline_elements, literal_piece.inline_elements);
  non_empty = total();
}

RegexPiece RegexPiece::Class(std::vector<CodepointRange> ranges) {
  RegexPiece piece;
  piece.inline_elements = 1;
  piece.non_empty = piece.total();
  piece.nullable = false;
  piece.expr = GrammarExpr::CharClass(std::move(ranges));
  return piece;
}

RegexPiece RegexPiece::Sequence(std::vector<RegexPiece> parts) {
  if (parts.empty()) return Empty();
  if (parts.size() == 1) return std::move(parts[0]);
  RegexPiece out;
  out.depth = 0;
  // If every part may be empty, the non-empty form is a choice (a helper rule): for each
  // part, its non-empty form followed by the parts after it.
  LoweredCost suffix;
  out.non_empty = {static_cast<int64_t>(parts.size()), 1};
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    out.non_empty = out.non_empty + it->non_empty + suffix;
    suffix = suffix + it->total();
  }
  std::vector<GrammarExpr> children;
  children.reserve(parts.size());
  for (RegexPiece& part : parts) {
    out.inline_elements = Add(out.inline_elements, part.inline_elements);
    out.defined = out.defined + part.defined;
    out.depth = std::max(out.depth, part.depth);
    out.nullable = out.nullable && part.nullable;
    children.push_back(std::move(part.expr));
  }
  if (!out.nullable) out.non_empty = out.total();
  out.depth += 1;
  out.expr = GrammarExpr::Sequence(std::move(children));
  return out;
}

RegexPiece RegexPiece::Choice(std::vector<RegexPiece> parts) {
  if (parts.empty()) return Empty();
  if (parts.size() == 1) return std::move(parts[0]);
  RegexPiece out;
  // A helper rule of one alternative per part, referenced where the choice is used.
  const LoweredCost rule{static_cast<int64_t>(parts.size()), 1};
  out.inline_elements = 1;
  out.defined = rule;
  out.non_empty = rule + LoweredCost{1, 0};
  out.depth = 0;
  out.nullable = false;
  std::vector<GrammarExpr> children;
  children.reserve(parts.size());
  for (RegexPiece& part : parts) {
    out.defined = out.defined + part.total();
    out.non_empty = out.non_empty + part.non_empty;
    out.depth = std::max(out.depth, part.depth);
    out.nullable = out.nullable || part.nullable;
    children.push_back(std::move(part.expr));
  }
  if (!out.nullable) out.non_empty = out.total();
  out.depth += 1;
  out.expr = GrammarExpr::Choice(std::move(children));
  return out;
}

namespace {

// The elements written where `item` repeated min..max times is used, and its helper rules.
std::pair<int64_t, LoweredCost> RepeatCost(const RegexPiece& item, int32_t min, int32_t max) {
  const bool unbounded = max == kUnbounded;
  const int64_t optional = unbounded ? 0 : std::max<int64_t>(int64_t{max} - min, 0);
  // min copies where it is used, and a reference to the helper rules for the rest.
  const int64_t inline_elements =
      Add(Mul(item.inline_elements, min), optional > 0 || unbounded ? 1 : 0);
  // The item's own helper rules once; per optional copy, a rule of the item, a reference to
  // the next one and two ends of alternative.
  LoweredCost defined = item.defined + LoweredCost{Add(item.inline_elements, 3), 1}.Times(optional);
  if (unbounded) {
    // The star rule: the non-empty form's alternatives (at most one per element), each with a
    // reference to the star and an end, and the empty alternative.
    defined = defined + item.non_empty.Times(3) + LoweredCost{1, 1};
  }
  return {inline_elements, defined};
}

}  // namespace

RegexPiece RegexPiece::Repeat(RegexPiece item, int32_t min, int32_t max) {
  if (max == 0) return Empty();
  if (min == 1 && max == 1) {
    item.literal = false;
    return item;
  }
  RegexPiece out;
  std::tie(out.inline_elements, out.defined) = RepeatCost(item, min, max);
  out.nullable = min == 0 || item.nullable;
  out.non_empty = out.total();
  if (out.nullable) {
    // The builder's non-empty form: the item's, then the item 0..max-1 more times.
    const auto [rest_inline, rest_defined] =
        RepeatCost(item, 0, max == kUnbounded ? kUnbounded : max - 1);
    out.non_empty = item.non_empty + LoweredCost{rest_inline, 0} + rest_defined + LoweredCost{1, 1};
  }
  out.depth = item.depth + 1;
  out.expr = GrammarExpr::Repeat(std::move(item.expr), min, max);
  return out;
}

}  // namespace tandem
