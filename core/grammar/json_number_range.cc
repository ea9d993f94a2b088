#include "core/grammar/json_number_range.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem {
namespace {

using E = GrammarExpr;

E Digit() { return E::CharClass({{'0', '9'}}); }
E DigitRange(char lo, char hi) {
  return E::CharClass({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}});
}
E OneOrMany(std::vector<E> alternatives) {
  return alternatives.size() == 1 ? std::move(alternatives[0]) : E::Choice(std::move(alternatives));
}

bool AllOf(absl::string_view s, char c) {
  return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

// Digit strings of lo's length between lo and hi (lo <= hi, same length; inner positions may
// have leading zeros). Recursion depth is the length: at most 17 digits.
E SameLengthRange(absl::string_view lo, absl::string_view hi) {
  if (lo.size() == 1) return DigitRange(lo[0], hi[0]);
  const absl::string_view lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  const size_t m = lo_rest.size();
  if (lo[0] == hi[0]) {
    return E::Sequence({E::Literal(std::string(1, lo[0])), SameLengthRange(lo_rest, hi_rest)});
  }
  const bool lo_rest_zero = AllOf(lo_rest, '0'), hi_rest_nine = AllOf(hi_rest, '9');
  std::vector<E> alternatives;
  if (!lo_rest_zero) {
    alternatives.push_back(E::Sequence({E::Literal(std::string(1, lo[0])),
                                        SameLengthRange(lo_rest, std::string(m, '9'))}));
  }
  // Leading digits whose every continuation is in range.
  const char first_full = lo_rest_zero ? lo[0] : lo[0] + 1;
  const char last_full = hi_rest_nine ? hi[0] : hi[0] - 1;
  if (first_full <= last_full) {
    alternatives.push_back(
        E::Sequence({DigitRange(first_full, last_full), E::Repeat(Digit(), static_cast<int32_t>(m), static_cast<int32_t>(m))}));
  }
  if (!hi_rest_nine) {
    alternatives.push_back(E::Sequence({E::Literal(std::string(1, hi[0])),
                                        SameLengthRange(std::string(m, '0'), hi_rest)}));
  }
  return OneOrMany(std::move(alternatives));
}

// Canonical decimals of a..b (0 <= a <= b; b nullopt: no upper end).
E NonNegativeRange(int64_t a, std::optional<int64_t> b) {
  const std::string sa = std::to_string(a);
  const std::string sb = b ? std::to_string(*b) : sa;
  std::vector<E> alternatives;
  for (size_t n = sa.size(); n <= sb.size(); ++n) {
    const std::string lo = n == sa.size() ? sa : "1" + std::string(n - 1, '0');
    const std::string hi = b && n == sb.size() ? sb : std::string(n, '9');
    alternatives.push_back(SameLengthRange(lo, hi));
  }
  if (!b) {
    // Every number with more digits than a (up to kMaxIntegerDigits).
    alternatives.push_back(E::Sequence({DigitRange('1', '9'),
                                        E::Repeat(Digit(), static_cast<int32_t>(sa.size()),
                                                  kMaxIntegerDigits - 1)}));
  }
  return OneOrMany(std::move(alternatives));
}

E AnyFraction() {
  return E::Sequence({E::Literal("."), E::Repeat(Digit(), 1, kMaxFractionDigits)});
}
// A fraction that is not all zeros: its value is > 0.
E NonZeroFraction() {
  std::vector<E> alternatives;
  for (int32_t zeros = 0; zeros < kMaxFractionDigits; ++zeros) {
    alternatives.push_back(E::Sequence({E::Literal(std::string(zeros, '0')), DigitRange('1', '9'),
                                        E::Repeat(Digit(), 0, kMaxFractionDigits - 1 - zeros)}));
  }
  return E::Sequence({E::Literal("."), E::Choice(std::move(alternatives))});
}

}  // namespace

GrammarExpr IntegerRangeExpr(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<E> alternatives;
  if (!hi || *hi >= 0) alternatives.push_back(NonNegativeRange(std::max<int64_t>(lo.value_or(0), 0), hi));
  if (!lo || *lo < 0) {
    // -x for x in [max(-hi, 1), -lo].
    const int64_t a = hi ? std::max<int64_t>(-*hi, 1) : 1;
    std::optional<int64_t> b;
    if (lo) b = -*lo;
    alternatives.push_back(E::Sequence({E::Literal("-"), NonNegativeRange(a, b)}));
  }
  return OneOrMany(std::move(alternatives));
}

// A number "I.F" (I >= 0) lies in [I, I+1), "-I.F" in (-(I+1), -I]; with a fraction not all
// zeros, in the open intervals. So with integer bounds L, U:
//   I.F  for I in [max(0, L + excl), U - 1], and I = L with a non-zero fraction if L is
//        exclusive;
//   -I.F for I in [max(0, -U + excl), -L - 1], and I = -U with a non-zero fraction if U is
//        exclusive.
GrammarExpr NumberRangeExpr(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::vector<E> alternatives;
  std::optional<int64_t> int_lo, int_hi;
  if (lo) int_lo = lo->value + (lo->exclusive ? 1 : 0);
  if (hi) int_hi = hi->value - (hi->exclusive ? 1 : 0);
  if (!int_lo || !int_hi || *int_lo <= *int_hi) alternatives.push_back(IntegerRangeExpr(int_lo, int_hi));

  const int64_t pos_a = std::max<int64_t>(0, int_lo.value_or(0));
  std::optional<int64_t> pos_b;
  if (hi) pos_b = hi->value - 1;
  if (!pos_b || pos_a <= *pos_b) {
    alternatives.push_back(E::Sequence({IntegerRangeExpr(pos_a, pos_b), AnyFraction()}));
  }
  if (lo && lo->exclusive && lo->value >= 0 && (!hi || lo->value <= hi->value - 1)) {
    alternatives.push_back(
        E::Sequence({E::Literal(std::to_string(lo->value)), NonZeroFraction()}));
  }

  const int64_t neg_a = std::max<int64_t>(0, hi ? -int_hi.value() : 0);
  std::optional<int64_t> neg_b;
  if (lo) neg_b = -lo->value - 1;
  if (!neg_b || neg_a <= *neg_b) {
    alternatives.push_back(
        E::Sequence({E::Literal("-"), IntegerRangeExpr(neg_a, neg_b), AnyFraction()}));
  }
  if (hi && hi->exclusive && hi->value <= 0 && (!lo || -hi->value <= -lo->value - 1)) {
    alternatives.push_back(E::Sequence(
        {E::Literal("-"), E::Literal(std::to_string(-hi->value)), NonZeroFraction()}));
  }
  return OneOrMany(std::move(alternatives));
}

}  // namespace tandem
