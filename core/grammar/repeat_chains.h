// The bounded repetitions of a Grammar, recognised from their lowered form (GrammarBuilder
// writes item{0,n} as a chain of rules, grammar_builder.cc):
//
//   level_n ::= item_1 level_(n-1) | ... | item_a level_(n-1) | ""
//   ...
//   level_1 ::= item_1 | ... | item_a | ""
//
// Every level has the same items, so a position at alternative a, offset o of level k stands
// for the same place as that alternative and offset of the chain's top level n, with k rather
// than n items left (the current one included). PositionTokenSets (position_token_sets.h)
// uses this to walk the token trie once per chain instead of once per level: a maxLength of
// 200 is one walk, not 200.
//
// Recognised structurally, so it holds for every front end and for grammars spliced after
// building (reasoning_prefix.h). Immutable; thread-safe to read.
#ifndef TANDEM_CORE_GRAMMAR_REPEAT_CHAINS_H_
#define TANDEM_CORE_GRAMMAR_REPEAT_CHAINS_H_

#include <cstdint>
#include <vector>

#include "core/grammar/grammar.h"

namespace tandem {

class RepeatChains {
 public:
  explicit RepeatChains(const Grammar& grammar);

  // The chain level of `rule` (1 for the innermost), or 0 if it is in no chain of two or more
  // levels.
  int32_t level(int32_t rule) const { return level_[rule]; }
  // The top rule of `rule`'s chain (itself at the top); only where level(rule) > 0.
  int32_t top(int32_t rule) const { return top_[rule]; }
  // The position of `top(rule_of(position))` at the same alternative and offset as `position`
  // (in a rule of some chain).
  int32_t ToTop(int32_t position) const;
  // The rule of a position of the code (its alternative's kEndOfAlternative included).
  int32_t rule_of(int32_t position) const { return rule_of_[position]; }

 private:
  const Grammar& grammar_;
  std::vector<int32_t> level_;
  std::vector<int32_t> top_;
  std::vector<int32_t> rule_of_;
  std::vector<int32_t> alternative_of_;  // per position: its alternative's index in its rule
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REPEAT_CHAINS_H_
