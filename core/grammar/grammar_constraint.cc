#include "core/grammar/grammar_constraint.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tandem {

// The state after an end token: no stacks at all.
static const MatcherState kEndedState = {};

GrammarConstraint::GrammarConstraint(std::shared_ptr<const void> owner,
                                     const GrammarTables& tables,
                                     std::shared_ptr<SharedMatcher> shared)
    : owner_(std::move(owner)), tables_(tables), shared_(std::move(shared)) {
  absl::MutexLock lock(&shared_->mutex);
  states_.push_back(shared_->matcher.Start());
  walk_.resize(tables_.trie->max_depth() + 1);
}

int64_t GrammarConstraint::vocab_size() const {
  return static_cast<int64_t>(tables_.token_bytes->size());
}

bool GrammarConstraint::IsEnd(int32_t token) const {
  const std::vector<int32_t>& ends = *tables_.end_ids;
  return std::find(ends.begin(), ends.end(), token) != ends.end();
}

bool GrammarConstraint::Accept(GrammarMatcher& matcher, int32_t token, MatcherState* next) {
  const MatcherState& state = states_.back();
  if (token < 0 || token >= vocab_size()) return false;
  if (IsEnd(token)) {
    if (!ended_ && !matcher.CanEnd(state)) return false;
    *next = kEndedState;
    return true;
  }
  if (ended_) return false;
  const std::string& bytes = (*tables_.token_bytes)[token];
  if (bytes.empty()) return false;
  *next = state;
  for (char c : bytes) {
    if (!matcher.Advance(*next, static_cast<uint8_t>(c), next)) return false;
  }
  return true;
}

absl::Status GrammarConstraint::Sync(absl::Span<const int32_t> tokens) {
  size_t keep = 0;
  while (keep < tokens_.size() && keep < tokens.size() && tokens_[keep] == tokens[keep]) ++keep;
  if (keep < tokens_.size()) {
    tokens_.resize(keep);
    states_.resize(keep + 1);
    ended_ = false;
    for (int32_t t : tokens_) ended_ = ended_ || IsEnd(t);
  }
  MatcherState next;
  absl::MutexLock lock(&shared_->mutex);
  for (size_t i = keep; i < tokens.size(); ++i) {
    if (!Accept(shared_->matcher, tokens[i], &next)) {
      return absl::InvalidArgumentError(absl::StrCat("token ", tokens[i], " at output index ", i,
                                                     " is not allowed by the constraint"));
    }
    tokens_.push_back(tokens[i]);
    states_.push_back(std::move(next));
    ended_ = ended_ || IsEnd(tokens[i]);
  }
  return absl::OkStatus();
}

void GrammarConstraint::FillMask(TokenMask* mask) {
  if (ended_) {
    mask->Resize(vocab_size());
    for (int32_t t : *tables_.end_ids) mask->Allow(t);
    return;
  }
  const MatcherState& state = states_.back();
  absl::MutexLock lock(&shared_->mutex);
  auto& masks = shared_->masks;
  auto it = masks.find(state);
  if (it == masks.end()) {
    if (masks.size() >= SharedMatcher::kMaxMasks) masks.clear();
    it = masks.emplace(state, TokenMask()).first;
    ComputeMask(shared_->matcher, state, &it->second);
  }
  *mask = it->second;
}

void GrammarConstraint::ComputeMask(GrammarMatcher& matcher, const MatcherState& state,
                                    TokenMask* mask) {
  mask->Resize(vocab_size());
  resumed_.clear();
  for (int32_t top : state) {
    if (top == GrammarMatcher::kEmptyStack) {
      for (int32_t t : *tables_.end_ids) {
        if (t >= 0 && t < vocab_size()) mask->Allow(t);
      }
      continue;
    }
    const std::shared_ptr<const PositionTokens> held =
        tables_.positions->Get(matcher.TopPosition(top), matcher.ParentPosition(top));
    const PositionTokens& sets = *held;
    if (!sets.accepted_bits.empty()) {
      for (size_t w = 0; w < mask->words.size(); ++w) mask->words[w] |= sets.accepted_bits[w];
    }
    for (int32_t t : sets.accepted_ids) mask->Allow(t);
    AddUncertain(matcher, top, sets, mask);
  }
}

void GrammarConstraint::AddUncertain(GrammarMatcher& matcher, int32_t top,
                                     const PositionTokens& sets, TokenMask* mask) {
  if (sets.uncertain.empty()) return;
  // The frame below the two the sets were computed for (or below the top alone): where a path
  // that finishes their alternative goes on.
  int32_t below = matcher.Below(top);
  if (matcher.ParentPosition(top) >= 0) below = matcher.Below(below);
  // The state resumed there, once per mask (a state's stacks often share the frame below).
  auto known = std::find_if(resumed_.begin(), resumed_.end(),
                            [below](const std::pair<int32_t, int32_t>& r) { return r.first == below; });
  if (known == resumed_.end()) {
    const MatcherState resumed = matcher.Resume(below);
    // Nothing may follow the root's end (-1).
    resumed_.emplace_back(below, resumed.empty() ? -1 : matcher.Intern(resumed));
    known = resumed_.end() - 1;
  }
  if (known->second < 0) return;
  // Each distinct rest once, in byte order, reusing the states of the prefix it shares with
  // the one before.
  walk_[0] = known->second;
  rest_ok_.assign(sets.rests.size(), 0);
  int32_t failed_at = -1;  // the byte index where the previous rest failed, or -1
  for (size_t r = 0; r < sets.rests.size(); ++r) {
    const std::string& rest = sets.rests[r];
    const int32_t shared = sets.rest_shared[r];
    if (failed_at >= 0 && shared > failed_at) continue;  // shares the prefix that failed
    failed_at = -1;
    for (size_t j = shared; j < rest.size(); ++j) {
      walk_[j + 1] = matcher.Step(walk_[j], static_cast<uint8_t>(rest[j]));
      if (walk_[j + 1] < 0) {
        failed_at = static_cast<int32_t>(j);
        break;
      }
    }
    rest_ok_[r] = failed_at < 0;
  }
  for (size_t k = 0; k < sets.uncertain.size(); ++k) {
    for (int32_t i = sets.rest_begin[k]; i < sets.rest_begin[k + 1]; ++i) {
      if (rest_ok_[sets.uncertain_rests[i]]) {
        mask->Allow(sets.uncertain[k]);
        break;
      }
    }
  }
}

}  // namespace tandem
