#include "core/grammar/regex_char_class.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tandem {
namespace {

// ECMAScript's \s: WhiteSpace (tab, vertical tab, form feed, space, no-break space, U+FEFF
// and the other Space_Separator (Zs) code points) and LineTerminator (\n, \r, U+2028, U+2029).
constexpr CodepointRange kSpaceRanges[] = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF},
};
constexpr CodepointRange kWordRanges[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
constexpr CodepointRange kDigitRanges[] = {{'0', '9'}};

template <size_t N>
CodepointSet FromRanges(const CodepointRange (&ranges)[N]) {
  CodepointSet set;
  for (const CodepointRange& r : ranges) set.Add(r.lo, r.hi);
  return set;
}

}  // namespace

void CodepointSet::Add(uint32_t lo, uint32_t hi) { ranges_.push_back({lo, hi}); }

void CodepointSet::AddAll(const CodepointSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
}

std::vector<CodepointRange> CodepointSet::Ranges() const {
  std::vector<CodepointRange> sorted = ranges_;
  std::sort(sorted.begin(), sorted.end(), [](const CodepointRange& a, const CodepointRange& b) {
    return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi);
  });
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : sorted) {
    // Merged when overlapping or adjacent (hi + 1 cannot overflow: hi <= kMaxCodepoint).
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

CodepointSet CodepointSet::Complement() const {
  CodepointSet out;
  uint32_t next = 0;  // the lowest code point not yet known to be in the set
  for (const CodepointRange& r : Ranges()) {
    if (r.lo > next) out.Add(next, r.lo - 1);
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.Add(next, kMaxCodepoint);
  return out;
}

bool ClassEscapeSet(char letter, CodepointSet* set) {
  switch (letter) {
    case 'd':
    case 'D':
      *set = FromRanges(kDigitRanges);
      break;
    case 'w':
    case 'W':
      *set = FromRanges(kWordRanges);
      break;
    case 's':
    case 'S':
      *set = FromRanges(kSpaceRanges);
      break;
    default:
      return false;
  }
  if (letter >= 'A' && letter <= 'Z') *set = set->Complement();
  return true;
}

CodepointSet DotSet() {
  CodepointSet terminators;
  terminators.Add('\n', '\n');
  terminators.Add('\r', '\r');
  terminators.Add(0x2028, 0x2029);
  return terminators.Complement();
}

}  // namespace tandem
