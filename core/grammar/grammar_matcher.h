// Runs a Grammar (grammar.h) over bytes: a set of pushdown stacks, each the positions in
// Grammar::code still to match, innermost last. Advancing by a byte keeps the stacks whose
// next element is a byte set holding it, steps past it and expands rule references until each
// stack's top is a byte set (or the stack is empty: the root is complete). Stacks live in a
// tree shared by all states of one matcher and are deduplicated, so equal states are equal
// vectors of node ids (MatcherState), cheap to copy, compare and hash.
//
//   GrammarMatcher m(grammar);
//   MatcherState s = m.Start();
//   for (char c : text) if (!m.Advance(s, c, &s)) return false;
//   return m.CanEnd(s);
//
// Bounded: a state holds at most GrammarMatcher::kMaxStacks stacks and a stack at most
// kMaxDepth frames; a step that would exceed either fails (Advance returns false and
// overflowed() turns true), so an ambiguous or deeply nested grammar refuses input instead of
// using unbounded memory.
//
// Not thread-safe (the node tree grows); one matcher per request.
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_MATCHER_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_MATCHER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar.h"

namespace tandem {

// A matcher state: the ids of its stacks' top nodes, sorted, without repeats. kEmptyStack (0)
// stands for a stack that matched the whole root; kEscaped (1), in a state begun by StartAt,
// for a path that finished the alternative it started in (what follows is not known).
using MatcherState = std::vector<int32_t>;

class GrammarMatcher {
 public:
  static constexpr int32_t kMaxStacks = 4096;
  static constexpr int32_t kMaxDepth = 2048;
  static constexpr int32_t kEmptyStack = 0;
  static constexpr int32_t kEscaped = 1;

  // `grammar` must outlive the matcher.
  explicit GrammarMatcher(const Grammar& grammar);

  // The state before any byte.
  MatcherState Start();
  // The state of a stack whose top is byte-set `position` over a frame at `parent_position`
  // (-1: no frame, the stack holds only the top), with nothing known below them: paths that
  // finish the parent frame's alternative (or, without one, the top's) end in kEscaped (see
  // PositionTokenSets).
  MatcherState StartAt(int32_t position, int32_t parent_position = -1);
  // The state of a stack popped down to frame `node` (what follows once everything above it
  // is complete): its expansion from that frame's position. Empty for kEmptyStack and kEscaped.
  MatcherState Resume(int32_t node);
  // The grammar position of stack top `top` (not kEmptyStack or kEscaped).
  int32_t TopPosition(int32_t top) const { return nodes_[top].position; }
  // The node below `node` (a stack top or a frame): kEmptyStack or kEscaped at the bottom.
  // TopPosition gives any node's position.
  int32_t Below(int32_t node) const { return nodes_[node].parent; }
  // The grammar position of the frame below stack top `top`, or -1 if there is none.
  int32_t ParentPosition(int32_t top) const {
    const int32_t parent = nodes_[top].parent;
    return parent <= kEscaped ? -1 : nodes_[parent].position;
  }
  // The state after `byte`; false (and `next` unspecified) if no stack accepts it. `next` may
  // be `state`.
  bool Advance(const MatcherState& state, uint8_t byte, MatcherState* next);
  // Whether stack top `top` takes `byte` and some path after it finishes the alternative of a
  // StartAt state (reaches kEscaped).
  bool EscapesAfter(int32_t top, uint8_t byte);
  // Whether the input so far is a complete sentence of the grammar.
  bool CanEnd(const MatcherState& state) const;
  // Whether some path of a StartAt state finished its alternative.
  bool Escaped(const MatcherState& state) const;
  // Whether some stack can take more bytes (neither kEmptyStack nor kEscaped).
  bool HasStacks(const MatcherState& state) const;
  // Whether some byte may follow (false: the grammar is complete and nothing can follow).
  bool CanContinue(const MatcherState& state) const;
  // The bytes some stack accepts next.
  ByteSet NextBytes(const MatcherState& state) const;

  // The same steps over interned states: equal states get one id, and each (id, byte) step is
  // computed once (a DFA built lazily as walks need it). Step returns -1 where Advance fails.
  int32_t Intern(const MatcherState& state);
  const MatcherState& StateOf(int32_t id) const { return interned_[id]; }
  int32_t Step(int32_t id, uint8_t byte) {
    if (id < static_cast<int32_t>(dense_steps_.size())) {
      const int32_t to = dense_steps_[id][byte];
      if (to != -2) return to;
    }
    return StepSlow(id, byte);
  }
  bool Escaped(int32_t id) const { return interned_escaped_[id] != 0; }

  bool overflowed() const { return overflowed_; }
  const Grammar& grammar() const { return grammar_; }
  int64_t node_count() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  struct Node {
    int32_t position;  // in grammar_.code: the next element to match
    int32_t parent;    // the node below; kEmptyStack at the bottom
    int32_t depth;
  };
  int32_t Push(int32_t position, int32_t parent);
  int32_t StepSlow(int32_t id, uint8_t byte);  // Step when not yet in dense_steps_
  // The stacks `top` becomes after `byte` (which its byte set holds), memoised.
  const std::vector<int32_t>& Transition(int32_t top, uint8_t byte);
  static constexpr size_t kMaxTransitions = 1 << 20;
  // Adds to `out` the expansions of `position` above `parent`: byte-set tops, or kEmptyStack.
  void Expand(int32_t position, int32_t parent, MatcherState* out);

  const Grammar& grammar_;
  std::vector<Node> nodes_;  // nodes_[0] is the empty stack
  absl::flat_hash_map<uint64_t, int32_t> node_ids_;  // (position, parent) -> node
  std::vector<int32_t> work_;                 // Expand's (position, parent) pairs
  // Pairs expanded since Start/Advance began: few in seen_small_, many in seen_.
  static constexpr size_t kSeenLinear = 32;
  bool MarkSeen(uint64_t key);  // false if already seen
  void ClearSeen();
  std::vector<uint64_t> seen_small_;
  absl::flat_hash_set<uint64_t> seen_;
  MatcherState scratch_;
  absl::flat_hash_map<uint64_t, std::vector<int32_t>> transitions_;  // (top, byte) -> stacks
  std::vector<MatcherState> interned_;
  std::vector<uint8_t> interned_escaped_;
  absl::flat_hash_map<MatcherState, int32_t> interned_ids_;
  absl::flat_hash_map<uint64_t, int32_t> steps_;  // (id, byte) -> id or -1
  // The first kMaxDenseStates interned states keep their steps in a table of 256 (-2: not yet
  // computed), the hot path of trie walks; later ones use steps_.
  static constexpr int32_t kMaxDenseStates = 4096;
  std::vector<std::array<int32_t, 256>> dense_steps_;
  bool overflowed_ = false;
};

// Whether `text` is a sentence of `grammar` (tests and tools).
bool GrammarMatches(const Grammar& grammar, absl::string_view text);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_MATCHER_H_
