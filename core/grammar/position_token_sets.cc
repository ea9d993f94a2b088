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
    : trie_(trie), chains_(grammar), token_bytes_(token_bytes), matcher_(grammar) {
  ComputeFollow(grammar);
}

namespace {

void Union(ByteSet* into, const ByteSet& from, bool* changed) {
  for (int w = 0; w < 4; ++w) {
    const uint64_t merged = into->words[w] | from.words[w];
    if (merged != into->words[w]) {
      into->words[w] = merged;
      *changed = true;
    }
  }
}

}  // namespace

void PositionTokenSets::ComputeFollow(const Grammar& grammar) {
  const size_t rules = grammar.rules.size();
  const std::vector<int32_t>& code = grammar.code;
  std::vector<bool> nullable(rules, false);
  std::vector<ByteSet> first(rules);
  // FIRST(code[pos..end of alternative]) into `out`; returns whether that run is nullable.
  const auto first_of_run = [&](int32_t pos, ByteSet* out, bool* changed) {
    for (; code[pos] != kEndOfAlternative; ++pos) {
      const int32_t el = code[pos];
      if (IsByteSet(el)) {
        Union(out, grammar.byte_sets[ByteSetIndex(el)], changed);
        return false;
      }
      Union(out, first[el], changed);
      if (!nullable[el]) return false;
    }
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules; ++r) {
      for (int32_t start : grammar.rules[r]) {
        if (first_of_run(start, &first[r], &changed) && !nullable[r]) {
          nullable[r] = changed = true;
        }
      }
    }
  }
  follow_.assign(rules, ByteSet());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules; ++r) {
      for (int32_t start : grammar.rules[r]) {
        for (int32_t pos = start; code[pos] != kEndOfAlternative; ++pos) {
          if (!IsRuleRef(code[pos])) continue;
          ByteSet next;
          bool ignored = false;
          const bool rest_nullable = first_of_run(pos + 1, &next, &ignored);
          if (rest_nullable) Union(&next, follow_[r], &ignored);
          Union(&follow_[code[pos]], next, &changed);
        }
      }
    }
  }
}

void PositionTokenSets::Account(int64_t bytes) {
  if (bytes_ + bytes > kMaxBytes) {
    sets_.clear();
    chain_walks_.clear();
    bytes_ = 0;
  }
  bytes_ += bytes;
}

namespace {

int64_t SizeOf(const PositionTokens& sets) {
  return static_cast<int64_t>(
      sizeof(int32_t) * (sets.accepted_ids.size() + 2 * sets.uncertain.size()) +
      sizeof(uint64_t) * sets.accepted_bits.size());
}

}  // namespace

std::shared_ptr<const PositionTokens> PositionTokenSets::Get(int32_t position,
                                                             int32_t parent_position) {
  absl::MutexLock lock(&mutex_);
  const std::pair<int32_t, int32_t> key(position, parent_position);
  auto it = sets_.find(key);
  if (it != sets_.end()) return it->second;
  std::shared_ptr<const PositionTokens> sets = FromChain(position, parent_position);
  if (sets == nullptr) {
    sets = Filter(Walk(position, parent_position, /*chain_top=*/-1, /*top_level=*/0), 1);
    Account(SizeOf(*sets));
  }
  sets_.emplace(key, sets);
  return sets;
}

std::shared_ptr<const PositionTokens> PositionTokenSets::FromChain(int32_t position,
                                                                   int32_t parent_position) {
  if (parent_position < 0) return nullptr;
  const int32_t rule = chains_.rule_of(parent_position);
  const int32_t level = chains_.level(rule);
  if (level == 0) return nullptr;
  const int32_t top = chains_.top(rule);
  // Every level must be followed by the same bytes for the levels to share a walk (they are:
  // each level is referenced only at the end of the one above).
  if (!(follow_[rule] == follow_[top])) return nullptr;
  const int32_t top_level = chains_.level(top);
  const int32_t top_parent = chains_.ToTop(parent_position);
  const int32_t top_position =
      chains_.level(chains_.rule_of(position)) > 0 && chains_.top(chains_.rule_of(position)) == top
          ? chains_.ToTop(position)
          : position;
  const std::pair<int32_t, int32_t> key(top_position, top_parent);
  auto it = chain_walks_.find(key);
  if (it == chain_walks_.end()) {
    ChainWalk walk;
    walk.tokens = Walk(top_position, top_parent, top, top_level);
    for (const WalkedToken& t : walk.tokens) {
      for (int32_t items : {t.accept_items, t.escape_items}) {
        if (items != kNever) walk.item_counts.push_back(items);
      }
    }
    std::sort(walk.item_counts.begin(), walk.item_counts.end());
    walk.item_counts.erase(std::unique(walk.item_counts.begin(), walk.item_counts.end()),
                           walk.item_counts.end());
    Account(static_cast<int64_t>(sizeof(WalkedToken) * walk.tokens.size()));
    it = chain_walks_.emplace(key, std::move(walk)).first;
  }
  ChainWalk& walk = it->second;
  // The level's sets are those of the largest item count at most `level` (0: none).
  auto upper = std::upper_bound(walk.item_counts.begin(), walk.item_counts.end(), level);
  const int32_t items = upper == walk.item_counts.begin() ? 0 : *(upper - 1);
  auto& sets = walk.levels[items];
  if (sets == nullptr) {
    sets = Filter(walk.tokens, items);
    Account(SizeOf(*sets));
  }
  return sets;
}

int32_t PositionTokenSets::StackItems(int32_t top, int32_t chain_top, int32_t top_level) const {
  // A stack over a frame of level m of the chain is in item top_level - m + 1; a stack over
  // none is in the innermost level's item (its reference is a tail call: no frame).
  int32_t lowest = 0;  // the level of the lowest frame in the chain
  for (int32_t node = top; node > GrammarMatcher::kEscaped; node = matcher_.Below(node)) {
    const int32_t rule = chains_.rule_of(matcher_.TopPosition(node));
    if (chains_.level(rule) > 0 && chains_.top(rule) == chain_top) lowest = chains_.level(rule);
  }
  return lowest > 0 ? top_level - lowest + 1 : top_level;
}

int32_t PositionTokenSets::ItemsUsed(int32_t id, int32_t chain_top, int32_t top_level) {
  if (static_cast<size_t>(id) >= items_used_.size()) {
    items_used_.resize(id + 1, 0);
    items_used_stamp_.resize(id + 1, -1);
  }
  if (items_used_stamp_[id] == walk_stamp_) return items_used_[id];
  int32_t fewest = kNever;
  for (int32_t top : matcher_.StateOf(id)) {
    if (top == GrammarMatcher::kEmptyStack || top == GrammarMatcher::kEscaped) continue;
    fewest = std::min(fewest, StackItems(top, chain_top, top_level));
  }
  items_used_stamp_[id] = walk_stamp_;
  items_used_[id] = fewest;
  return fewest;
}

int32_t PositionTokenSets::EscapeItems(int32_t id, uint8_t byte, int32_t chain_top,
                                       int32_t top_level) {
  const uint64_t key = (static_cast<uint64_t>(id) << 8) | byte;
  auto it = escape_items_.find(key);
  if (it != escape_items_.end()) return it->second;
  int32_t fewest = kNever;
  for (int32_t top : matcher_.StateOf(id)) {
    if (matcher_.EscapesAfter(top, byte)) {
      fewest = std::min(fewest, StackItems(top, chain_top, top_level));
    }
  }
  escape_items_.emplace(key, fewest);
  return fewest;
}

std::vector<PositionTokenSets::WalkedToken> PositionTokenSets::Walk(int32_t position,
                                                                     int32_t parent_position,
                                                                     int32_t chain_top,
                                                                     int32_t top_level) {
  ++walk_stamp_;
  escape_items_.clear();
  std::vector<WalkedToken> out;
  // state[d]: after the first d bytes of the current trie path (interned, GrammarMatcher::
  // Intern), path[d] the d-th byte; escape[d]: the fewest items a path had used where it
  // finished the alternative before byte d with a byte after it that may follow the rule
  // (kNever: no such path).
  const int32_t depth = trie_.max_depth() + 1;
  std::vector<int32_t> state(depth), escape(depth, kNever);
  std::vector<uint8_t> path(depth);
  state[0] = matcher_.Intern(matcher_.StartAt(position, parent_position));
  const ByteSet& follow =
      follow_[chains_.rule_of(parent_position < 0 ? position : parent_position)];
  const bool counting = chain_top >= 0;
  // Without a chain every path counts one item.
  const auto live_items = [&](int32_t id) {
    return counting ? ItemsUsed(id, chain_top, top_level) : 1;
  };
  const auto escape_items = [&](int32_t from, uint8_t byte) {
    return counting ? EscapeItems(from, byte, chain_top, top_level) : 1;
  };
  for (int32_t i = 1; i < trie_.size();) {
    const int32_t d = trie_.depth(i);
    path[d] = trie_.byte(i);
    escape[d] = escape[d - 1];
    if (d >= 2 && matcher_.Escaped(state[d - 1]) && follow.Contains(path[d])) {
      escape[d] = std::min(escape[d], escape_items(state[d - 2], path[d - 1]));
    }
    state[d] = matcher_.Step(state[d - 1], path[d]);
    if (state[d] < 0) {
      // No path inside the alternative takes this byte; one that left it earlier might.
      if (escape[d] != kNever) {
        for (int32_t token : trie_.tokens_under(i)) out.push_back({token, kNever, escape[d]});
      }
      i = trie_.subtree_end(i);
      continue;
    }
    if (const absl::Span<const int32_t> ending = trie_.tokens_at(i); !ending.empty()) {
      // Accepted by a path still inside the alternative, or by one that finishes it with the
      // token's last byte.
      int32_t used = live_items(state[d]);
      if (matcher_.Escaped(state[d])) used = std::min(used, escape_items(state[d - 1], path[d]));
      for (int32_t token : ending) out.push_back({token, used, escape[d]});
    }
    ++i;
  }
  return out;
}

std::shared_ptr<const PositionTokens> PositionTokenSets::Filter(
    const std::vector<WalkedToken>& walked, int32_t items) const {
  auto out = std::make_shared<PositionTokens>();
  std::vector<int32_t> accepted;
  for (const WalkedToken& t : walked) {
    if (t.accept_items <= items) {
      accepted.push_back(t.token);
    } else if (t.escape_items <= items) {
      out->uncertain.push_back(t.token);
    }
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
