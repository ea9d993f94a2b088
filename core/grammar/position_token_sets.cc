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
    : trie_(trie), token_bytes_(token_bytes), matcher_(grammar) {
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
  rule_of_.assign(code.size(), -1);
  for (size_t r = 0; r < rules; ++r) {
    for (int32_t start : grammar.rules[r]) {
      for (int32_t pos = start; code[pos] != kEndOfAlternative; ++pos) {
        rule_of_[pos] = static_cast<int32_t>(r);
      }
    }
  }
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

std::shared_ptr<const PositionTokens> PositionTokenSets::Get(int32_t position,
                                                             int32_t parent_position) {
  absl::MutexLock lock(&mutex_);
  const std::pair<int32_t, int32_t> key(position, parent_position);
  auto it = sets_.find(key);
  if (it != sets_.end()) return it->second;
  std::shared_ptr<const PositionTokens> sets = Compute(position, parent_position);
  const int64_t size = static_cast<int64_t>(
      sizeof(int32_t) * (sets->accepted_ids.size() + 2 * sets->uncertain.size()) +
      sizeof(uint64_t) * sets->accepted_bits.size());
  if (bytes_ + size > kMaxBytes) {
    sets_.clear();
    bytes_ = 0;
  }
  bytes_ += size;
  sets_.emplace(key, sets);
  return sets;
}

std::shared_ptr<const PositionTokens> PositionTokenSets::Compute(int32_t position,
                                                                 int32_t parent_position) {
  auto out = std::make_shared<PositionTokens>();
  std::vector<int32_t> accepted;
  // state[d]: after the first d bytes of the current trie path; escaped[d]: some path
  // finished the alternative before byte d and the byte after it may follow the rule.
  std::vector<int32_t> state(trie_.max_depth() + 1);  // interned (GrammarMatcher::Intern)
  std::vector<bool> escaped(trie_.max_depth() + 1, false);
  state[0] = matcher_.Intern(matcher_.StartAt(position, parent_position));
  const ByteSet& follow = follow_[rule_of_[parent_position < 0 ? position : parent_position]];
  const auto uncertain = [&](absl::Span<const int32_t> tokens) {
    out->uncertain.insert(out->uncertain.end(), tokens.begin(), tokens.end());
  };
  for (int32_t i = 1; i < trie_.size();) {
    const int32_t d = trie_.depth(i);
    escaped[d] = escaped[d - 1] ||
                 (matcher_.Escaped(state[d - 1]) && follow.Contains(trie_.byte(i)));
    state[d] = matcher_.Step(state[d - 1], trie_.byte(i));
    if (state[d] < 0) {
      // No path inside the alternative takes this byte; one that left it earlier might.
      if (escaped[d]) uncertain(trie_.tokens_under(i));
      i = trie_.subtree_end(i);
      continue;
    }
    for (int32_t token : trie_.tokens_at(i)) accepted.push_back(token);
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
