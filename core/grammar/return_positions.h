// Where each rule of a Grammar returns to: the positions a frame directly below a stack top in
// that rule can hold (GrammarMatcher's nodes). A reference that is not the last element of its
// alternative pushes the position after it; one that is the last is a tail call and returns
// where its own rule returns; the root returns to nothing (-1, the bottom of the stack).
//
// So the (top position, parent position) pairs PositionTokenSets can be asked for are known
// when the grammar is compiled: every byte-set position of a rule with each of its rule's
// return positions (PositionTokenSets::ComputeAll).
#ifndef TANDEM_CORE_GRAMMAR_RETURN_POSITIONS_H_
#define TANDEM_CORE_GRAMMAR_RETURN_POSITIONS_H_

#include <cstdint>
#include <vector>

#include "core/grammar/grammar.h"

namespace tandem {

// Per rule, its return positions in ascending order (-1 first where the rule can be at the
// bottom of a stack).
std::vector<std::vector<int32_t>> ReturnPositions(const Grammar& grammar);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_RETURN_POSITIONS_H_
