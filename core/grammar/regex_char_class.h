// Sets of code points for a regular expression's classes ([a-z\d], [^\s], `.`, \w): ranges
// added in any order, complements, and the sets ECMAScript's class escapes stand for.
#ifndef TANDEM_CORE_GRAMMAR_REGEX_CHAR_CLASS_H_
#define TANDEM_CORE_GRAMMAR_REGEX_CHAR_CLASS_H_

#include <cstdint>
#include <vector>

#include "core/grammar/grammar_expr.h"

namespace tandem {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class CodepointSet {
 public:
  // Adds lo..hi (lo <= hi <= kMaxCodepoint).
  void Add(uint32_t lo, uint32_t hi);
  void AddAll(const CodepointSet& other);
  // The code points 0..kMaxCodepoint not in the set.
  CodepointSet Complement() const;
  // Sorted, disjoint and non-adjacent.
  std::vector<CodepointRange> Ranges() const;

 private:
  std::vector<CodepointRange> ranges_;  // in the order added; may overlap
};

// The set \d, \D, \w, \W, \s or \S stands for (`letter` is the escape's letter), as ECMAScript
// defines them without the `i` flag; false for any other letter.
bool ClassEscapeSet(char letter, CodepointSet* set);

// What `.` matches: any code point but the line terminators \n, \r, U+2028 and U+2029.
CodepointSet DotSet();

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REGEX_CHAR_CLASS_H_
