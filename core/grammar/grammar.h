// A context-free grammar over bytes, flat, as GrammarBuilder (grammar_builder.h) lowers the
// front ends' expressions and GrammarMatcher (grammar_matcher.h) runs it.
//
// Each rule is a list of alternatives; each alternative a run of elements in `code` ended by
// kEndOfAlternative. An element is a rule reference (a rule id, >= 0) or a byte set (one
// byte out of 256; ByteSetElement / ByteSetIndex convert). The empty alternative is a lone
// kEndOfAlternative. The builder guarantees: every referenced rule has at least one
// alternative, and no rule can reach itself without consuming a byte (no left recursion),
// so expanding references always terminates.
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

inline constexpr int32_t kEndOfAlternative = -1;

// Element encoding of byte set i: -2 - i.
inline constexpr int32_t ByteSetElement(int32_t index) { return -2 - index; }
inline constexpr int32_t ByteSetIndex(int32_t element) { return -2 - element; }
inline constexpr bool IsByteSet(int32_t element) { return element <= -2; }
inline constexpr bool IsRuleRef(int32_t element) { return element >= 0; }

// 256 bits: bit b of words[b / 64] says whether byte b is in the set.
struct ByteSet {
  std::array<uint64_t, 4> words{};
  bool Contains(uint8_t byte) const { return (words[byte >> 6] >> (byte & 63)) & 1; }
  void Add(uint8_t byte) { words[byte >> 6] |= uint64_t{1} << (byte & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet& other) const { return words == other.words; }
};

struct Grammar {
  std::vector<int32_t> code;                   // elements; alternatives end in kEndOfAlternative
  std::vector<std::vector<int32_t>> rules;     // per rule: the start of each alternative in code
  std::vector<std::string> rule_names;         // per rule, for messages
  std::vector<ByteSet> byte_sets;
  int32_t root = 0;

  // A readable GBNF-like listing (byte sets as [..] of bytes), for tests and logs.
  std::string DebugString() const;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_H_
