// The tokens of a vocabulary as a trie of their bytes, flattened in depth-first preorder with
// children in byte order, so walking it visits tokens in lexicographic order of their bytes
// and a rejected prefix skips its whole subtree in one step:
//
//   for (int32_t i = 1; i < trie.size();) {       // node 0 is the root (the empty prefix)
//     if (!Extend(state[trie.depth(i) - 1], trie.byte(i), &state[trie.depth(i)])) {
//       i = trie.subtree_end(i);
//       continue;
//     }
//     for (int32_t token : trie.tokens_at(i)) ...   // tokens whose bytes end here
//     ++i;
//   }
//
// Tokens without bytes are not in the trie. Immutable once built; thread-safe to read.
#ifndef TANDEM_CORE_GRAMMAR_TOKEN_TRIE_H_
#define TANDEM_CORE_GRAMMAR_TOKEN_TRIE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace tandem {

class TokenTrie {
 public:
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  int32_t size() const { return static_cast<int32_t>(byte_.size()); }
  uint8_t byte(int32_t node) const { return byte_[node]; }
  int32_t depth(int32_t node) const { return depth_[node]; }
  // One past the last node of `node`'s subtree.
  int32_t subtree_end(int32_t node) const { return subtree_end_[node]; }
  absl::Span<const int32_t> tokens_at(int32_t node) const {
    return absl::MakeConstSpan(tokens_).subspan(first_token_[node],
                                                first_token_[node + 1] - first_token_[node]);
  }
  // Every token in `node`'s subtree, `node` included.
  absl::Span<const int32_t> tokens_under(int32_t node) const {
    return absl::MakeConstSpan(tokens_).subspan(
        first_token_[node], first_token_[subtree_end_[node]] - first_token_[node]);
  }
  int32_t max_depth() const { return max_depth_; }

 private:
  std::vector<uint8_t> byte_;
  std::vector<int32_t> depth_;
  std::vector<int32_t> subtree_end_;
  std::vector<int32_t> first_token_;  // [size() + 1]: tokens_[first_token_[i] ..) end at i
  std::vector<int32_t> tokens_;
  int32_t max_depth_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_TOKEN_TRIE_H_
