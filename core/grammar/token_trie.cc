#include "core/grammar/token_trie.h"

#include <algorithm>
#include <numeric>

namespace tandem {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) {
  // Tokens sorted by bytes: consecutive tokens share their longest common prefix, so each
  // token adds one node per byte past that prefix.
  std::vector<int32_t> order;
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return token_bytes[a] != token_bytes[b] ? token_bytes[a] < token_bytes[b] : a < b;
  });
  byte_.push_back(0);
  depth_.push_back(0);
  std::vector<int32_t> node_of_token;  // per entry of `order`: its node
  std::vector<int32_t> path = {0};     // path[d]: the node at depth d of the previous token
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& bytes = token_bytes[id];
    size_t common = 0;
    if (previous != nullptr) {
      while (common < bytes.size() && common < previous->size() &&
             bytes[common] == (*previous)[common]) {
        ++common;
      }
    }
    path.resize(common + 1);
    for (size_t d = common; d < bytes.size(); ++d) {
      path.push_back(static_cast<int32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(bytes[d]));
      depth_.push_back(static_cast<int32_t>(d + 1));
    }
    max_depth_ = std::max(max_depth_, static_cast<int32_t>(bytes.size()));
    node_of_token.push_back(path.back());
    previous = &bytes;
  }
  // Subtree ends: the next node at the same or a smaller depth.
  const int32_t n = size();
  subtree_end_.assign(n, n);
  std::vector<int32_t> open;  // nodes whose subtree is still open, by depth
  for (int32_t i = 0; i < n; ++i) {
    while (!open.empty() && depth_[open.back()] >= depth_[i]) {
      subtree_end_[open.back()] = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  // Tokens grouped by node, in node order (`order` is already in preorder of its nodes).
  first_token_.assign(n + 1, 0);
  for (int32_t node : node_of_token) ++first_token_[node + 1];
  std::partial_sum(first_token_.begin(), first_token_.end(), first_token_.begin());
  tokens_ = order;
}

}  // namespace tandem
