#include "core/tokenizer/bpe_merge.h"

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/utf8.h"

namespace tandem {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;  // kScores: the symbol's bytes in the text
  size_t size;   // 0 once merged into its left neighbour
};

struct ScoredPair {
  float score;
  int left;
  int right;
  size_t size;  // left.size + right.size when queued; a mismatch later means it is stale
};

struct ScoredPairOrder {
  // Highest score first, then the leftmost pair.
  bool operator()(const ScoredPair& a, const ScoredPair& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct RankedPair {
  int32_t rank;
  int left;
  int right;
  int32_t left_id;
  int32_t right_id;
};

struct RankedPairOrder {
  // Lowest rank first, then the leftmost pair.
  bool operator()(const RankedPair& a, const RankedPair& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::vector<absl::string_view> MergeByScores(absl::string_view text, const TokenIndex& index,
                                             const std::vector<float>& scores) {
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8::CharLength(text, pos);
    const int i = static_cast<int>(symbols.size());
    symbols.push_back({i - 1, i + 1, pos, n});
    pos += n;
  }
  if (symbols.empty()) return {};
  symbols.back().next = -1;

  std::priority_queue<ScoredPair, std::vector<ScoredPair>, ScoredPairOrder> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    auto it = index.find(text.substr(l.begin, l.size + r.size));
    if (it == index.end()) return;
    queue.push({scores[it->second], left, right, l.size + r.size});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const ScoredPair pair = queue.top();
    queue.pop();
    Symbol& l = symbols[pair.left];
    Symbol& r = symbols[pair.right];
    if (l.size == 0 || r.size == 0 || l.size + r.size != pair.size || l.next != pair.right) {
      continue;  // one side changed since the pair was queued
    }
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = pair.left;
    try_add(l.prev, pair.left);
    try_add(pair.left, l.next);
  }

  std::vector<absl::string_view> pieces;
  for (int i = 0; i >= 0; i = symbols[i].next) {
    pieces.push_back(text.substr(symbols[i].begin, symbols[i].size));
  }
  return pieces;
}

void MergeByRanks(const MergeTable& merges, std::vector<int32_t>* ids) {
  const int n = static_cast<int>(ids->size());
  if (n < 2) return;
  std::vector<int32_t>& id = *ids;
  std::vector<int> next(n);
  std::vector<int> prev(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<RankedPair, std::vector<RankedPair>, RankedPairOrder> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    auto it = merges.find(MergeKey(id[left], id[right]));
    if (it == merges.end()) return;
    queue.push({it->second.rank, left, right, id[left], id[right]});
  };
  for (int i = 1; i < n; ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const RankedPair pair = queue.top();
    queue.pop();
    // Stale if either side was merged away or changed since the pair was queued (ids only
    // grow into longer tokens, so an unchanged id means an unchanged symbol).
    if (!alive[pair.left] || !alive[pair.right] || next[pair.left] != pair.right ||
        id[pair.left] != pair.left_id || id[pair.right] != pair.right_id) {
      continue;
    }
    id[pair.left] = merges.find(MergeKey(pair.left_id, pair.right_id))->second.id;
    alive[pair.right] = false;
    next[pair.left] = next[pair.right];
    if (next[pair.right] >= 0) prev[next[pair.right]] = pair.left;
    try_add(prev[pair.left], pair.left);
    try_add(pair.left, next[pair.left]);
  }

  int out = 0;
  for (int i = 0; i >= 0; i = next[i]) id[out++] = id[i];
  ids->resize(out);
}

}  // namespace tandem
