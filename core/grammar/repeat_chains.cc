#include "core/grammar/repeat_chains.h"

#include <algorithm>

#include "absl/types/span.h"

namespace tandem {
namespace {

// The elements of the alternative starting at `start` (without its kEndOfAlternative).
absl::Span<const int32_t> AlternativeAt(const Grammar& g, int32_t start) {
  int32_t end = start;
  while (g.code[end] != kEndOfAlternative) ++end;
  return absl::MakeConstSpan(g.code).subspan(start, end - start);
}

// The rule every non-empty alternative of `rule` ends with, if the last alternative is empty
// and there is at least one other; else -1.
int32_t NextCandidate(const Grammar& g, int32_t rule) {
  const std::vector<int32_t>& alts = g.rules[rule];
  if (alts.size() < 2 || !AlternativeAt(g, alts.back()).empty()) return -1;
  int32_t next = -1;
  for (size_t i = 0; i + 1 < alts.size(); ++i) {
    absl::Span<const int32_t> alt = AlternativeAt(g, alts[i]);
    if (alt.empty() || !IsRuleRef(alt.back()) || alt.back() == rule) return -1;
    if (next >= 0 && alt.back() != next) return -1;
    next = alt.back();
  }
  return next;
}

enum class Link { kNone, kToInnermost, kToLevel };

// How `rule` links to its candidate `next`: kToInnermost if next's alternatives are exactly
// rule's items (next is level 1), kToLevel if they are the items followed by next's own
// candidate (next is a level of two or more), kNone otherwise.
Link LinkOf(const Grammar& g, int32_t rule, int32_t next, int32_t next_next) {
  const std::vector<int32_t>& alts = g.rules[rule];
  const std::vector<int32_t>& next_alts = g.rules[next];
  if (next_alts.size() != alts.size()) return Link::kNone;
  bool innermost = true, level = next_next >= 0;
  for (size_t i = 0; i < alts.size(); ++i) {
    absl::Span<const int32_t> item = AlternativeAt(g, alts[i]);
    if (!item.empty()) item.remove_suffix(1);
    const absl::Span<const int32_t> other = AlternativeAt(g, next_alts[i]);
    innermost = innermost && item == other;
    level = level && (i + 1 == alts.size() ? other.empty()
                                           : !other.empty() &&
                                                 item == other.first(other.size() - 1));
  }
  if (innermost) return Link::kToInnermost;
  return level ? Link::kToLevel : Link::kNone;
}

}  // namespace

RepeatChains::RepeatChains(const Grammar& grammar) : grammar_(grammar) {
  const int32_t rules = static_cast<int32_t>(grammar.rules.size());
  rule_of_.assign(grammar.code.size(), -1);
  alternative_of_.assign(grammar.code.size(), -1);
  for (int32_t r = 0; r < rules; ++r) {
    const std::vector<int32_t>& alts = grammar.rules[r];
    for (size_t a = 0; a < alts.size(); ++a) {
      for (int32_t pos = alts[a];; ++pos) {
        rule_of_[pos] = r;
        alternative_of_[pos] = static_cast<int32_t>(a);
        if (grammar.code[pos] == kEndOfAlternative) break;
      }
    }
  }
  std::vector<int32_t> next(rules);
  for (int32_t r = 0; r < rules; ++r) next[r] = NextCandidate(grammar, r);
  std::vector<Link> link(rules, Link::kNone);
  for (int32_t r = 0; r < rules; ++r) {
    if (next[r] >= 0) link[r] = LinkOf(grammar, r, next[r], next[next[r]]);
  }
  // Levels, following links down to a level 1; a loop of links (a ::= x b | ""; b ::= x a |
  // "") never reaches one and is no chain.
  level_.assign(rules, -1);  // -1: not yet known
  std::vector<int32_t> path;
  for (int32_t r = 0; r < rules; ++r) {
    path.clear();
    int32_t at = r, base = 0;
    while (level_[at] < 0 && link[at] == Link::kToLevel &&
           static_cast<int32_t>(path.size()) <= rules) {
      path.push_back(at);
      at = next[at];
    }
    if (level_[at] >= 0) {
      base = level_[at];
    } else if (link[at] == Link::kToInnermost) {
      level_[next[at]] = std::max(level_[next[at]], 1);
      base = level_[at] = 2;
    } else {
      base = level_[at] = 0;  // the end of the links is no level 1 (or a loop)
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      base = base > 0 ? base + 1 : 0;
      level_[*it] = base;
    }
  }
  for (int32_t& l : level_) l = std::max(l, 0);
  // Tops: follow the links up (a level below two tops takes either: their items are equal).
  top_.resize(rules);
  std::vector<int32_t> up(rules, -1);
  for (int32_t r = 0; r < rules; ++r) {
    top_[r] = r;
    if (level_[r] > 0 && next[r] >= 0 && link[r] != Link::kNone) up[next[r]] = r;
  }
  for (int32_t r = 0; r < rules; ++r) {
    if (level_[r] == 0) continue;
    int32_t t = r;
    while (up[t] >= 0 && level_[up[t]] == level_[t] + 1) t = up[t];
    top_[r] = t;
  }
}

int32_t RepeatChains::ToTop(int32_t position) const {
  const int32_t rule = rule_of_[position];
  const int32_t offset = position - grammar_.rules[rule][alternative_of_[position]];
  return grammar_.rules[top_[rule]][alternative_of_[position]] + offset;
}

}  // namespace tandem
