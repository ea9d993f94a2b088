#include "core/grammar/grammar_matcher.h"

#include <algorithm>

namespace tandem {
namespace {

uint64_t NodeKey(int32_t position, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) |
         static_cast<uint32_t>(parent);
}

}  // namespace

GrammarMatcher::GrammarMatcher(const Grammar& grammar) : grammar_(grammar) {
  nodes_.push_back({kEndOfAlternative, kEmptyStack, 0});  // kEmptyStack
  nodes_.push_back({kEndOfAlternative, kEmptyStack, 0});  // kEscaped
}

// Most steps expand a handful of pairs: a short vector scanned linearly beats hashing; past
// kSeenLinear pairs they move to the hash set.
bool GrammarMatcher::MarkSeen(uint64_t key) {
  if (seen_small_.size() < kSeenLinear) {
    for (uint64_t k : seen_small_) {
      if (k == key) return false;
    }
    seen_small_.push_back(key);
    return true;
  }
  if (seen_.empty()) seen_.insert(seen_small_.begin(), seen_small_.end());
  return seen_.insert(key).second;
}

void GrammarMatcher::ClearSeen() {
  seen_small_.clear();
  if (!seen_.empty()) seen_.clear();
}

int32_t GrammarMatcher::Push(int32_t position, int32_t parent) {
  auto [it, added] = node_ids_.emplace(NodeKey(position, parent), 0);
  if (added) {
    it->second = static_cast<int32_t>(nodes_.size());
    nodes_.push_back({position, parent, nodes_[parent].depth + 1});
  }
  return it->second;
}

// Follows `position` above `parent` until every path stands on a byte set (a stack top) or
// has popped everything (the empty stack). Rule references at the end of an alternative are
// tail calls: they push no frame, so right recursion keeps stacks flat. Terminates because the
// builder refused left recursion; `seen_` keeps ambiguous grammars from repeating work.
void GrammarMatcher::Expand(int32_t position, int32_t parent, MatcherState* out) {
  const std::vector<int32_t>& code = grammar_.code;
  work_.clear();
  work_.push_back(position);
  work_.push_back(parent);
  while (!work_.empty()) {
    const int32_t at_parent = work_.back();
    work_.pop_back();
    const int32_t at = work_.back();
    work_.pop_back();
    if (!MarkSeen(NodeKey(at, at_parent))) continue;
    const int32_t element = code[at];
    if (element == kEndOfAlternative) {
      if (at_parent == kEmptyStack || at_parent == kEscaped) {
        out->push_back(at_parent);
      } else {
        work_.push_back(nodes_[at_parent].position);
        work_.push_back(nodes_[at_parent].parent);
      }
    } else if (IsByteSet(element)) {
      if (nodes_[at_parent].depth >= kMaxDepth) {
        overflowed_ = true;
        continue;
      }
      out->push_back(Push(at, at_parent));
    } else {
      int32_t continuation = at_parent;
      if (code[at + 1] != kEndOfAlternative) {
        if (nodes_[at_parent].depth >= kMaxDepth) {
          overflowed_ = true;
          continue;
        }
        continuation = Push(at + 1, at_parent);
      }
      for (int32_t start : grammar_.rules[element]) {
        work_.push_back(start);
        work_.push_back(continuation);
      }
    }
  }
}

namespace {

// Sorts and deduplicates; false if over the stack limit.
bool Finish(MatcherState* state, bool* overflowed) {
  std::sort(state->begin(), state->end());
  state->erase(std::unique(state->begin(), state->end()), state->end());
  if (static_cast<int32_t>(state->size()) > GrammarMatcher::kMaxStacks) {
    *overflowed = true;
    state->clear();
    return false;
  }
  return true;
}

}  // namespace

MatcherState GrammarMatcher::Start() {
  MatcherState state;
  ClearSeen();
  for (int32_t start : grammar_.rules[grammar_.root]) Expand(start, kEmptyStack, &state);
  Finish(&state, &overflowed_);
  return state;
}

MatcherState GrammarMatcher::StartAt(int32_t position, int32_t parent_position) {
  MatcherState state;
  ClearSeen();
  const int32_t below = parent_position < 0 ? kEscaped : Push(parent_position, kEscaped);
  Expand(position, below, &state);
  Finish(&state, &overflowed_);
  return state;
}

MatcherState GrammarMatcher::Resume(int32_t node) {
  MatcherState state;
  if (node <= kEscaped) return state;
  ClearSeen();
  Expand(nodes_[node].position, nodes_[node].parent, &state);
  Finish(&state, &overflowed_);
  return state;
}

bool GrammarMatcher::Advance(const MatcherState& state, uint8_t byte, MatcherState* next) {
  scratch_.clear();
  for (int32_t top : state) {
    if (top == kEmptyStack || top == kEscaped) continue;
    const Node& node = nodes_[top];
    if (!grammar_.byte_sets[ByteSetIndex(grammar_.code[node.position])].Contains(byte)) continue;
    const std::vector<int32_t>& after = Transition(top, byte);
    scratch_.insert(scratch_.end(), after.begin(), after.end());
  }
  if (!Finish(&scratch_, &overflowed_)) return false;
  next->swap(scratch_);
  return !next->empty();
}

bool GrammarMatcher::EscapesAfter(int32_t top, uint8_t byte) {
  if (top == kEmptyStack || top == kEscaped) return false;
  if (!grammar_.byte_sets[ByteSetIndex(grammar_.code[nodes_[top].position])].Contains(byte)) {
    return false;
  }
  const std::vector<int32_t>& after = Transition(top, byte);
  return std::find(after.begin(), after.end(), kEscaped) != after.end();
}

// What one stack becomes after a byte its top accepts depends only on the stack (the byte has
// been checked), so it is computed once per stack and byte and kept: walks over a trie or along
// a string keep taking the same steps. Bounded: the memo starts over past kMaxTransitions.
const std::vector<int32_t>& GrammarMatcher::Transition(int32_t top, uint8_t byte) {
  const uint64_t key = (static_cast<uint64_t>(top) << 8) | byte;
  auto it = transitions_.find(key);
  if (it != transitions_.end()) return it->second;
  if (transitions_.size() >= kMaxTransitions) transitions_.clear();
  std::vector<int32_t> after;
  ClearSeen();
  const Node node = nodes_[top];
  Expand(node.position + 1, node.parent, &after);
  return transitions_.emplace(key, std::move(after)).first->second;
}

int32_t GrammarMatcher::Intern(const MatcherState& state) {
  auto [it, added] = interned_ids_.emplace(state, static_cast<int32_t>(interned_.size()));
  if (added) {
    interned_.push_back(state);
    interned_escaped_.push_back(Escaped(state));
    if (it->second < kMaxDenseStates) {
      dense_steps_.emplace_back();
      dense_steps_.back().fill(-2);
    }
  }
  return it->second;
}

int32_t GrammarMatcher::StepSlow(int32_t id, uint8_t byte) {
  if (id < kMaxDenseStates) {
    int32_t& to = dense_steps_[id][byte];
    if (to != -2) return to;
    MatcherState next;
    const int32_t stepped = Advance(interned_[id], byte, &next) ? Intern(next) : -1;
    dense_steps_[id][byte] = stepped;  // (Intern may have grown dense_steps_: index again)
    return stepped;
  }
  const uint64_t key = (static_cast<uint64_t>(id) << 8) | byte;
  auto it = steps_.find(key);
  if (it != steps_.end()) return it->second;
  MatcherState next;
  const int32_t to = Advance(interned_[id], byte, &next) ? Intern(next) : -1;
  steps_.emplace(key, to);
  return to;
}

bool GrammarMatcher::CanEnd(const MatcherState& state) const {
  return !state.empty() && state.front() == kEmptyStack;
}

bool GrammarMatcher::CanContinue(const MatcherState& state) const {
  return HasStacks(state);
}

bool GrammarMatcher::Escaped(const MatcherState& state) const {
  return std::binary_search(state.begin(), state.end(), kEscaped);
}

bool GrammarMatcher::HasStacks(const MatcherState& state) const {
  return !state.empty() && state.back() > kEscaped;
}

ByteSet GrammarMatcher::NextBytes(const MatcherState& state) const {
  ByteSet bytes;
  for (int32_t top : state) {
    if (top == kEmptyStack || top == kEscaped) continue;
    const ByteSet& set = grammar_.byte_sets[ByteSetIndex(grammar_.code[nodes_[top].position])];
    for (int w = 0; w < 4; ++w) bytes.words[w] |= set.words[w];
  }
  return bytes;
}

bool GrammarMatches(const Grammar& grammar, absl::string_view text) {
  GrammarMatcher matcher(grammar);
  MatcherState state = matcher.Start();
  for (char c : text) {
    if (!matcher.Advance(state, static_cast<uint8_t>(c), &state)) return false;
  }
  return matcher.CanEnd(state);
}

}  // namespace tandem
