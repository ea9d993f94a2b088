// A parsed part of a regular expression: its GrammarExpr, and an estimate of what
// GrammarBuilder counts against its limits when it lowers it, so the regex compiler can refuse
// a blow-up past a limit, naming the construct's offset, before anything is lowered (the
// builder's own count stays the final check: the estimate tracks its lowering closely, but
// not exactly, e.g. where it inlines a class's UTF-8 sequences into a repetition).
// Internal to regex_compiler.cc.
//
// The estimates follow the builder's lowering, which counts an element when it makes it and
// again when a helper rule takes it: an item repeated {m,n} is lowered once, written out m
// times where it is used and once more in each of n - m helper rules (so nested counts
// multiply); a star lowers its item's non-empty form again (for a sequence of n parts that can
// each be empty, n suffixes: quadratic; for nested stars, doubling per level); a choice
// inside a sequence is a helper rule; a class is one reference to a rule defined once per
// distinct class (the caller counts those definitions: ClassDefinitionCost).
#ifndef TANDEM_CORE_GRAMMAR_REGEX_PIECE_H_
#define TANDEM_CORE_GRAMMAR_REGEX_PIECE_H_

#include <cstdint>
#include <vector>

#include "core/grammar/grammar_expr.h"
#include "core/grammar/regex_char_class.h"

namespace tandem {

// Grammar elements and rules; sums and products saturate far past any limit.
struct LoweredCost {
  int64_t elements = 0;
  int64_t rules = 0;

  LoweredCost operator+(const LoweredCost& other) const;
  LoweredCost Times(int64_t n) const;
};

// What defining the rule of a class (normalized `ranges`) costs, once per distinct class.
LoweredCost ClassDefinitionCost(const std::vector<CodepointRange>& ranges);

struct RegexPiece {
  GrammarExpr expr;
  int64_t inline_elements = 0;         // written where the piece is used (copied by repetitions)
  LoweredCost defined;                 // helper rules, made once each time the piece is lowered
  LoweredCost non_empty;               // inline + defined of the builder's non-empty form
  int64_t non_empty_alternatives = 0;  // the alternatives that form lowers to
  int32_t depth = 1;                   // of `expr`
  bool nullable = true;                // may match the empty string
  bool literal = false;                // an unquantified literal, which a next literal may extend

  LoweredCost total() const { return LoweredCost{inline_elements, 0} + defined; }

  static RegexPiece Empty();
  static RegexPiece Literal(uint32_t codepoint);
  static RegexPiece Class(std::vector<CodepointRange> ranges);
  // `parts` one after the other; a single part stands for itself.
  static RegexPiece Sequence(std::vector<RegexPiece> parts);
  // One of `parts`; a single part stands for itself.
  static RegexPiece Choice(std::vector<RegexPiece> parts);
  // `item` min..max times (max kUnbounded: no bound); {0} is empty and {1} the item itself.
  static RegexPiece Repeat(RegexPiece item, int32_t min, int32_t max);

  // Appends a literal piece's bytes (both literal).
  void Extend(const RegexPiece& literal_piece);
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REGEX_PIECE_H_
