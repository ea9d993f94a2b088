#include "core/grammar/utf8_ranges.h"

#include <algorithm>

namespace tandem {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// The UTF-8 bytes of `cp` into `out`; returns how many.
int Encode(uint32_t cp, uint8_t out[4]) {
  const int n = EncodedLength(cp);
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
  return n;
}

// Appends the sequences of lo..hi (same encoded length, no surrogates) to `out`. The depth of
// the recursion is bounded by the 4 byte positions (each split fixes one more of them).
void Split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>* out) {
  const int n = EncodedLength(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;  // the low i trailing bytes
    if ((lo & ~m) != (hi & ~m)) {
      // The higher bytes differ: the low bytes must span their full range at both ends.
      if ((lo & m) != 0) {
        Split(lo, lo | m, out);
        Split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Split(lo, (hi & ~m) - 1, out);
        Split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a);
  Encode(hi, b);
  Utf8Sequence sequence;
  for (int i = 0; i < n; ++i) sequence.emplace_back(a[i], b[i]);
  out->push_back(std::move(sequence));
}

}  // namespace

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated) {
  std::vector<CodepointRange> clipped;
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodepoint) continue;
    clipped.push_back({r.lo, std::min(r.hi, kMaxCodepoint)});
  }
  // Surrogates are never matched: take them out as if they were not asked for...
  std::vector<CodepointRange> no_surrogates;
  for (CodepointRange r : clipped) {
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      no_surrogates.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) no_surrogates.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) no_surrogates.push_back({kSurrogateHi + 1, r.hi});
  }
  // ... and, for a negated class, as if they were (so the complement leaves them out too).
  if (negated) no_surrogates.push_back({kSurrogateLo, kSurrogateHi});
  std::sort(no_surrogates.begin(), no_surrogates.end(),
            [](CodepointRange a, CodepointRange b) { return a.lo < b.lo; });
  std::vector<CodepointRange> merged;
  for (CodepointRange r : no_surrogates) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (!negated) return merged;
  std::vector<CodepointRange> complement;
  uint32_t next = 0;
  for (CodepointRange r : merged) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) complement.push_back({next, kMaxCodepoint});
  return complement;
}

std::vector<Utf8Sequence> Utf8Sequences(const std::vector<CodepointRange>& normalized) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  std::vector<Utf8Sequence> out;
  for (CodepointRange r : normalized) {
    uint32_t lo = r.lo;
    for (uint32_t end : kLengthEnds) {
      if (lo > r.hi) break;
      if (lo > end) continue;
      const uint32_t hi = std::min(r.hi, end);
      Split(lo, hi, &out);
      lo = hi + 1;
    }
  }
  return out;
}

}  // namespace tandem
