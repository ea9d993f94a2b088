// The two BPE merge loops (internal to core/tokenizer): SentencePiece's, driven by token
// scores over text, and Hugging Face's, driven by merge ranks over token ids. Both merge one
// pair at a time through a priority queue over a linked list of symbols: O(n log n) per piece.
#ifndef TANDEM_CORE_TOKENIZER_BPE_MERGE_H_
#define TANDEM_CORE_TOKENIZER_BPE_MERGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace tandem {

// Token text -> id.
using TokenIndex = absl::flat_hash_map<std::string, int32_t>;

// Splits `text` (valid UTF-8) as SentencePiece BPE does: starting from single characters,
// repeatedly merge the adjacent pair whose concatenation is the token with the highest score
// (the leftmost pair on ties). Returns views into `text`; a piece is a token or one character.
std::vector<absl::string_view> MergeByScores(absl::string_view text, const TokenIndex& index,
                                             const std::vector<float>& scores);

// (left id, right id) -> (rank, merged id).
struct MergeResult {
  int32_t rank;
  int32_t id;
};
using MergeTable = absl::flat_hash_map<uint64_t, MergeResult>;
inline uint64_t MergeKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Merges `symbols` (token ids) in place as Hugging Face BPE does: repeatedly merge the
// adjacent pair with the lowest rank (the leftmost on ties).
void MergeByRanks(const MergeTable& merges, std::vector<int32_t>* symbols);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_BPE_MERGE_H_
