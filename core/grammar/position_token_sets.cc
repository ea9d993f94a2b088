#include "core/grammar/position_token_sets.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "absl/strings/string_view.h"
#include "core/grammar/return_positions.h"

namespace tandem {
namespace {

// The length of the prefix `a` and `b` share.
int32_t SharedPrefix(absl::string_view a, absl::string_view b) {
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

namespace {

int64_t SizeOf(const PositionTokens& sets) {
  return static_cast<int64_t>(
      sizeof(int32_t) * (sets.accepted_ids.size() + 2 * sets.uncertain.size()) +
      sizeof(int32_t) * (sets.uncertain_rests.size() + sets.rest_shared.size()) +
      sizeof(uint64_t) * sets.accepted_bits.size()) +
         std::accumulate(sets.rests.begin(), sets.rests.end(), int64_t{0},
                         [](int64_t n, const std::string& r) { return n + r.size(); });
}

uint64_t Mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x9E3779B97F4A7C15ull; }

uint64_t HashOf(const PositionTokens& sets) {
  uint64_t h = Mix(sets.accepted_ids.size(), sets.accepted_bits.size());
  for (int32_t t : sets.accepted_ids) h = Mix(h, static_cast<uint32_t>(t));
  for (uint64_t w : sets.accepted_bits) h = Mix(h, w);
  for (int32_t t : sets.uncertain) h = Mix(h, static_cast<uint32_t>(t) | (uint64_t{1} << 40));
  for (int32_t r : sets.uncertain_rests) h = Mix(h, static_cast<uint32_t>(r) | (uint64_t{1} << 41));
  return h;
}

bool Equal(const PositionTokens& a, const PositionTokens& b) {
  return a.accepted_ids == b.accepted_ids && a.accepted_bits == b.accepted_bits &&
         a.uncertain == b.uncertain && a.rest_begin == b.rest_begin &&
         a.uncertain_rests == b.uncertain_rests && a.rests == b.rests;
}

}  // namespace

std::shared_ptr<const PositionTokens> PositionTokenSets::Keep(
    std::shared_ptr<const PositionTokens> sets) {
  std::vector<std::shared_ptr<const PositionTokens>>& same = distinct_[HashOf(*sets)];
  for (const auto& kept : same) {
    if (Equal(*kept, *sets)) return kept;
  }
  bytes_ += SizeOf(*sets);
  same.push_back(sets);
  return sets;
}

int64_t PositionTokenSets::ComputeAll(double budget_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const Grammar& grammar = matcher_.grammar();
  const std::vector<std::vector<int32_t>> returns = ReturnPositions(grammar);
  int64_t computed = 0;
  for (int32_t pos = 0; pos < static_cast<int32_t>(grammar.code.size()); ++pos) {
    if (!IsByteSet(grammar.code[pos])) continue;
    for (int32_t parent : returns[chains_.rule_of(pos)]) {
      // A level below a chain's top takes its sets from the top's walk on first use (a lookup).
      if (parent >= 0 && ChainTop(parent) >= 0 && ChainTop(parent) != chains_.rule_of(parent)) {
        continue;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              budget_seconds ||
          held_bytes() > kMaxBytes / 2) {
        return computed;
      }
      Get(pos, parent);
      ++computed;
    }
  }
  return computed;
}

std::shared_ptr<const PositionTokens> PositionTokenSets::Get(int32_t position,
                                                             int32_t parent_position) {
  absl::MutexLock lock(&mutex_);
  const std::pair<int32_t, int32_t> key(position, parent_position);
  auto it = sets_.find(key);
  if (it != sets_.end()) return it->second;
  if (bytes_ > kMaxBytes) {  // start over (callers keep the sets they hold)
    sets_.clear();
    chain_walks_.clear();
    distinct_.clear();
    bytes_ = 0;
  }
  std::shared_ptr<const PositionTokens> sets = FromChain(position, parent_position);
  if (sets == nullptr) {
    Walk(position, parent_position, /*chain_top=*/-1, /*top_level=*/0);
    sets = Keep(std::move(FilterLevels({1})[0]));
  }
  sets_.emplace(key, sets);
  return sets;
}

std::shared_ptr<const PositionTokens> PositionTokenSets::FromChain(int32_t position,
                                                                   int32_t parent_position) {
  if (parent_position < 0) return nullptr;
  const int32_t top = ChainTop(parent_position);
  if (top < 0) return nullptr;
  const int32_t level = chains_.level(chains_.rule_of(parent_position));
  const int32_t top_level = chains_.level(top);
  const int32_t top_parent = chains_.ToTop(parent_position);
  const int32_t top_position =
      chains_.level(chains_.rule_of(position)) > 0 && chains_.top(chains_.rule_of(position)) == top
          ? chains_.ToTop(position)
          : position;
  const std::pair<int32_t, int32_t> key(top_position, top_parent);
  auto it = chain_walks_.find(key);
  if (it == chain_walks_.end()) {
    // One walk for every level: each level's sets are filtered from it (the largest item count
    // at most the level picks them; 0: none), then the walk is dropped.
    Walk(top_position, top_parent, top, top_level);
    std::vector<bool> seen(top_level + 1, false);
    seen[0] = true;
    for (const WalkedToken& t : walked_) {
      for (int32_t items : {t.accept_items, t.escape_items}) {
        if (items <= top_level) seen[items] = true;
      }
    }
    ChainWalk walk;
    for (int32_t items = 0; items <= top_level; ++items) {
      if (seen[items]) walk.item_counts.push_back(items);
    }
    std::vector<std::shared_ptr<const PositionTokens>> levels = FilterLevels(walk.item_counts);
    for (size_t l = 0; l < levels.size(); ++l) {
      walk.levels[walk.item_counts[l]] = Keep(std::move(levels[l]));
    }
    it = chain_walks_.emplace(key, std::move(walk)).first;
  }
  const ChainWalk& walk = it->second;
  auto upper = std::upper_bound(walk.item_counts.begin(), walk.item_counts.end(), level);
  return walk.levels.at(*(upper - 1));
}

int32_t PositionTokenSets::ChainTop(int32_t parent_position) const {
  const int32_t rule = chains_.rule_of(parent_position);
  if (chains_.level(rule) == 0) return -1;
  const int32_t top = chains_.top(rule);
  // Every level must be followed by the same bytes for the levels to share a walk (they are:
  // each level is referenced only at the end of the one above).
  return follow_[rule] == follow_[top] ? top : -1;
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

void PositionTokenSets::Walk(int32_t position, int32_t parent_position, int32_t chain_top,
                             int32_t top_level) {
  ++walk_stamp_;
  ++walks_;
  escape_items_.clear();
  walked_.clear();
  walked_escapes_.clear();
  // state_[d]: after the first d bytes of the current trie path (interned, GrammarMatcher::
  // Intern), path_[d] the d-th byte; on_path: where a path finished the alternative before
  // byte d of the current path with a byte after it that may follow the rule, by that d.
  const size_t depth = trie_.max_depth() + 1;
  state_.resize(depth);
  path_.resize(depth);
  std::vector<std::pair<int32_t, Escape>> on_path;
  state_[0] = matcher_.Intern(matcher_.StartAt(position, parent_position));
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
  // The escapes on the path to the current node into walked_escapes_, once per node that
  // records tokens; returns the fewest items among them (kNever: none).
  const auto escapes = [&](int32_t* begin, int32_t* end) {
    *begin = static_cast<int32_t>(walked_escapes_.size());
    int32_t fewest = kNever;
    for (const auto& [at, escape] : on_path) {
      walked_escapes_.push_back(escape);
      fewest = std::min(fewest, escape.items);
    }
    *end = static_cast<int32_t>(walked_escapes_.size());
    return fewest;
  };
  int32_t* state = state_.data();
  uint8_t* path = path_.data();
  for (int32_t i = 1; i < trie_.size();) {
    const int32_t d = trie_.depth(i);
    path[d] = trie_.byte(i);
    while (!on_path.empty() && on_path.back().first >= d) on_path.pop_back();
    if (d >= 2 && matcher_.Escaped(state[d - 1]) && follow.Contains(path[d])) {
      on_path.push_back({d, Escape{d - 1, escape_items(state[d - 2], path[d - 1])}});
    }
    state[d] = matcher_.Step(state[d - 1], path[d]);
    if (state[d] < 0) {
      // No path inside the alternative takes this byte; one that left it earlier might.
      if (!on_path.empty()) {
        int32_t begin, end;
        const int32_t escaped = escapes(&begin, &end);
        for (int32_t token : trie_.tokens_under(i)) {
          walked_.push_back({token, kNever, escaped, begin, end});
        }
      }
      i = trie_.subtree_end(i);
      continue;
    }
    if (const absl::Span<const int32_t> ending = trie_.tokens_at(i); !ending.empty()) {
      // Accepted by a path still inside the alternative, or by one that finishes it with the
      // token's last byte.
      int32_t used = live_items(state[d]);
      if (matcher_.Escaped(state[d])) used = std::min(used, escape_items(state[d - 1], path[d]));
      int32_t begin, end;
      const int32_t escaped = escapes(&begin, &end);
      for (int32_t token : ending) walked_.push_back({token, used, escaped, begin, end});
    }
    ++i;
  }
}

PositionTokenSets::RestTable PositionTokenSets::MakeRestTable(
    const std::vector<const WalkedToken*>& maybe_uncertain) const {
  RestTable table;
  const auto rest = [&](const WalkedToken* t, int32_t e) {
    return absl::string_view(token_bytes_[t->token]).substr(walked_escapes_[e].offset);
  };
  for (const WalkedToken* t : maybe_uncertain) {
    for (int32_t e = t->escapes_begin; e < t->escapes_end; ++e) table.rests.push_back(rest(t, e));
  }
  std::sort(table.rests.begin(), table.rests.end());
  table.rests.erase(std::unique(table.rests.begin(), table.rests.end()), table.rests.end());
  for (const WalkedToken* t : maybe_uncertain) {
    for (int32_t e = t->escapes_begin; e < t->escapes_end; ++e) {
      table.rest_of.push_back(static_cast<int32_t>(
          std::lower_bound(table.rests.begin(), table.rests.end(), rest(t, e)) -
          table.rests.begin()));
    }
  }
  return table;
}

void PositionTokenSets::AddUncertainOfLevel(int32_t items,
                                            const std::vector<const WalkedToken*>& maybe_uncertain,
                                            const RestTable& table,
                                            std::vector<int32_t>* level_rest_scratch,
                                            PositionTokens* sets) const {
  std::vector<int32_t>& level_rest = *level_rest_scratch;
  const auto uncertain = [items](const WalkedToken* t) {
    return t->accept_items > items && t->escape_items <= items;
  };
  // The rests this level uses (escapes open to it), kept in byte order with the prefix each
  // shares with the one before; level_rest maps the table's rests to them (-1: unused).
  level_rest.assign(table.rests.size(), -1);
  size_t pair = 0;
  for (const WalkedToken* t : maybe_uncertain) {
    const bool counted = uncertain(t);
    for (int32_t e = t->escapes_begin; e < t->escapes_end; ++e, ++pair) {
      if (counted && walked_escapes_[e].items <= items) level_rest[table.rest_of[pair]] = 0;
    }
  }
  for (size_t r = 0; r < table.rests.size(); ++r) {
    if (level_rest[r] < 0) continue;
    level_rest[r] = static_cast<int32_t>(sets->rests.size());
    sets->rest_shared.push_back(
        sets->rests.empty() ? 0 : SharedPrefix(sets->rests.back(), table.rests[r]));
    sets->rests.emplace_back(table.rests[r]);
  }
  pair = 0;
  for (const WalkedToken* t : maybe_uncertain) {
    const bool counted = uncertain(t);
    if (counted) {
      sets->rest_begin.push_back(static_cast<int32_t>(sets->uncertain_rests.size()));
      sets->uncertain.push_back(t->token);
    }
    for (int32_t e = t->escapes_begin; e < t->escapes_end; ++e, ++pair) {
      if (counted && walked_escapes_[e].items <= items) {
        sets->uncertain_rests.push_back(level_rest[table.rest_of[pair]]);
      }
    }
  }
  sets->rest_begin.push_back(static_cast<int32_t>(sets->uncertain_rests.size()));
}

std::vector<std::shared_ptr<const PositionTokens>> PositionTokenSets::FilterLevels(
    const std::vector<int32_t>& item_counts) const {
  const int64_t vocab = static_cast<int64_t>(token_bytes_.size());
  // Accepted tokens by the count that admits them; the tokens that may be uncertain.
  const int32_t most = item_counts.empty() ? 0 : item_counts.back();
  std::vector<std::vector<int32_t>> admitted(most + 1);
  std::vector<const WalkedToken*> maybe_uncertain;
  for (const WalkedToken& t : walked_) {
    if (t.accept_items <= most) admitted[t.accept_items].push_back(t.token);
    if (t.escape_items <= most && t.accept_items > t.escape_items) maybe_uncertain.push_back(&t);
  }
  const RestTable table = MakeRestTable(maybe_uncertain);
  std::vector<std::shared_ptr<const PositionTokens>> out;
  // The running union of admitted[0 .. items], as ids and as bits.
  std::vector<int32_t> accepted, level_rest;
  std::vector<uint64_t> accepted_bits((vocab + 63) / 64, 0);
  int32_t added = -1;
  for (int32_t items : item_counts) {
    for (; added < items; ++added) {
      for (int32_t t : admitted[added + 1]) {
        accepted.push_back(t);
        accepted_bits[t / 64] |= uint64_t{1} << (t % 64);
      }
    }
    auto sets = std::make_shared<PositionTokens>();
    if (static_cast<int64_t>(accepted.size()) * 64 > vocab) {
      sets->accepted_bits = accepted_bits;
    } else {
      sets->accepted_ids = accepted;
      std::sort(sets->accepted_ids.begin(), sets->accepted_ids.end());
    }
    AddUncertainOfLevel(items, maybe_uncertain, table, &level_rest, sets.get());
    out.push_back(std::move(sets));
  }
  return out;
}

}  // namespace tandem
