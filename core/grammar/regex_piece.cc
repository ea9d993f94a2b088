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

// A code point range within one UTF-8 length becomes at most 7 byte-range sequences (a
// partial lead, full middles and a partial tail at each of up to 3 trailing bytes); the 4
// places where the length changes or the surrogates sit split at most 4 ranges once more...
constexpr int64_t kSequencesPerRange = 7;
constexpr int64_t kSplitSequences = 4 * 7;
// ...and a sequence is up to 4 byte sets and an end of alternative.
constexpr int64_t kElementsPerSequence = 5;

int64_t Add(int64_t a, int64_t b) { return std::min(a + b, kSaturated); }

int64_t Mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : std::min(a * b, kSaturated);
}

// A choice of `n` non-empty forms costing `forms`: lowered, and counted again (with an end per
// alternative and a reference) if it becomes a helper rule.
LoweredCost ChoiceForm(const LoweredCost& forms, int64_t n) {
  return forms + LoweredCost{Add(forms.elements, Add(n, 1)), 1};
}

}  // namespace

LoweredCost LoweredCost::operator+(const LoweredCost& other) const {
  return LoweredCost{Add(elements, other.elements), Add(rules, other.rules)};
}

LoweredCost LoweredCost::Times(int64_t n) const {
  return LoweredCost{Mul(elements, n), Mul(rules, n)};
}

LoweredCost ClassDefinitionCost(const std::vector<CodepointRange>& ranges) {
  // A class of ASCII code points only is one byte set, no rule.
  if (ranges.empty() || ranges.back().hi < 0x80) return LoweredCost{};
  const int64_t sequences =
      Add(Mul(static_cast<int64_t>(ranges.size()), kSequencesPerRange), kSplitSequences);
  return LoweredCost{Add(Mul(sequences, kElementsPerSequence), 1), 1};
}

RegexPiece RegexPiece::Empty() { return RegexPiece(); }

RegexPiece RegexPiece::Literal(uint32_t codepoint) {
  std::string bytes;
  utf8::Append(codepoint, &bytes);
  RegexPiece piece;
  piece.inline_elements = static_cast<int64_t>(bytes.size());
  piece.non_empty = piece.total();
  piece.non_empty_alternatives = 1;
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
  piece.non_empty_alternatives = 1;
  piece.nullable = false;
  piece.expr = GrammarExpr::CharClass(std::move(ranges));
  return piece;
}

RegexPiece RegexPiece::Sequence(std::vector<RegexPiece> parts) {
  if (parts.empty()) return Empty();
  if (parts.size() == 1) return std::move(parts[0]);
  RegexPiece out;
  out.depth = 0;
  // If every part may be empty, the non-empty form is a choice: for each part, its non-empty
  // form followed by the parts after it (counted twice if it becomes a helper rule).
  LoweredCost suffix;
  LoweredCost forms;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    forms = forms + it->non_empty + suffix;
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
  if (out.nullable) {
    out.non_empty = ChoiceForm(forms, static_cast<int64_t>(parts.size()));
    out.non_empty_alternatives = static_cast<int64_t>(parts.size());
  } else {
    out.non_empty = out.total();
    out.non_empty_alternatives = 1;
  }
  out.depth += 1;
  out.expr = GrammarExpr::Sequence(std::move(children));
  return out;
}

RegexPiece RegexPiece::Choice(std::vector<RegexPiece> parts) {
  if (parts.empty()) return Empty();
  if (parts.size() == 1) return std::move(parts[0]);
  const int64_t n = static_cast<int64_t>(parts.size());
  RegexPiece out;
  // Lowered (the parts counted), then a helper rule of one alternative per part (their
  // elements counted again), referenced where the choice is used.
  out.inline_elements = 1;
  out.defined = LoweredCost{n, 1};
  out.depth = 0;
  out.nullable = false;
  LoweredCost forms;
  std::vector<GrammarExpr> children;
  children.reserve(parts.size());
  for (RegexPiece& part : parts) {
    out.defined = out.defined + part.total() + LoweredCost{part.inline_elements, 0};
    forms = forms + part.non_empty;
    out.depth = std::max(out.depth, part.depth);
    out.nullable = out.nullable || part.nullable;
    children.push_back(std::move(part.expr));
  }
  out.non_empty = out.nullable ? ChoiceForm(forms, n) : out.total();
  out.non_empty_alternatives = n;
  out.depth += 1;
  out.expr = GrammarExpr::Choice(std::move(children));
  return out;
}

namespace {

// The elements written where `item` repeated min..max times is used, and the rest counted.
std::pair<int64_t, LoweredCost> RepeatCost(const RegexPiece& item, int32_t min, int32_t max) {
  const bool unbounded = max == kUnbounded;
  const int64_t optional = unbounded ? 0 : std::max<int64_t>(int64_t{max} - min, 0);
  // min copies where it is used, and a reference to the helper rules for the rest.
  const int64_t inline_elements =
      Add(Mul(item.inline_elements, min), optional > 0 || unbounded ? 1 : 0);
  // The item lowered once; per optional copy, a rule of the item, a reference to the next one
  // and two ends of alternative.
  LoweredCost counted = item.total() + LoweredCost{Add(item.inline_elements, 3), 1}.Times(optional);
  if (unbounded) {
    // The star rule: the non-empty form lowered, then its alternatives counted again with a
    // reference to the star and an end each, and the empty alternative.
    counted = counted + item.non_empty + LoweredCost{item.non_empty.elements, 0} +
              LoweredCost{Add(Mul(item.non_empty_alternatives, 2), 1), 1};
  }
  return {inline_elements, counted};
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
  out.non_empty_alternatives = 1;
  if (out.nullable) {
    // The builder's non-empty form: the item's, then the item 0..max-1 more times.
    const auto [rest_inline, rest_counted] =
        RepeatCost(item, 0, max == kUnbounded ? kUnbounded : max - 1);
    out.non_empty = item.non_empty + LoweredCost{rest_inline, 0} + rest_counted;
  }
  out.depth = item.depth + 1;
  out.expr = GrammarExpr::Repeat(std::move(item.expr), min, max);
  return out;
}

}  // namespace tandem
