#include "core/grammar/position_token_sets.h"

#include <algorithm>

namespace tandem {
namespace {

// The length of the prefix `a` and `b` share.
int32_t SharedPrefix(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int32_t>(i);
}

}  // namespace

PositionTokenSets::PositionTokenSets(const Grammar& grammar, const TokenTrie& trie,
                                     const std::vector<std::string>& token_bytes)
    : trie_(trie), token_bytes_(token_bytes), matcher_(grammar) {}

const PositionTokens& PositionTokenSets::Get(int32_t position) {
  absl::MutexLock lock(&mutex_);
  auto it = sets_.find(position);
  if (it == sets_.end()) it = sets_.emplace(position, Compute(position)).first;
  return *it->second;
}

std::unique_ptr<PositionTokens> PositionTokenSets::Compute(int32_t position) {
  auto out = std::make_unique<PositionTokens>();
  std::vector<int32_t> accepted;
  // state[d], escaped[d]: after the first d bytes of the current trie path.
  std::vector<MatcherState> state(trie_.max_depth() + 1);
  std::vector<bool> escaped(trie_.max_depth() + 1, false);
  state[0] = matcher_.StartAt(position);
  const auto uncertain = [&](absl::Span<const int32_t> tokens) {
    out->uncertain.insert(out->uncertain.end(), tokens.begin(), tokens.end());
  };
  for (int32_t i = 1; i < trie_.size();) {
    const int32_t d = trie_.depth(i);
    if (!matcher_.Advance(state[d - 1], trie_.byte(i), &state[d])) {
      // No path inside the alternative takes this byte; one that left it earlier might.
      if (escaped[d - 1]) uncertain(trie_.tokens_under(i));
      i = trie_.subtree_end(i);
      continue;
    }
    escaped[d] = escaped[d - 1] || matcher_.Escaped(state[d]);
    for (int32_t token : trie_.tokens_at(i)) accepted.push_back(token);
    if (!matcher_.HasStacks(state[d])) {
      // Only finished paths: every longer token continues below this stack.
      const absl::Span<const int32_t> below = trie_.tokens_under(i).subspan(trie_.tokens_at(i).size());
      if (escaped[d]) uncertain(below);
      i = trie_.subtree_end(i);
      continue;
    }
    ++i;
  }
  const int64_t vocab = static_cast<int64_t>(token_bytes_.size());
  if (static_cast<int64_t>(accepted.size()) * 64 > vocab) {
    out->accepted_bits.assign((vocab + 63) / 64, 0);
    for (int32_t t : accepted) out->accepted_bits[t / 64] |= uint64_t{1} << (t % 64);
  } else {
    out->accepted_ids = std::move(accepted);
  }
  out->uncertain_shared.resize(out->uncertain.size(), 0);
  for (size_t k = 1; k < out->uncertain.size(); ++k) {
    out->uncertain_shared[k] =
        SharedPrefix(token_bytes_[out->uncertain[k - 1]], token_bytes_[out->uncertain[k]]);
  }
  return out;
}

}  // namespace tandem
