// Which tokens a grammar position accepts whatever lies below it on the stack: the idea behind
// XGrammar's adaptive token-mask cache. For a stack whose top is byte-set position P, walking
// the token trie from StartAt(P) sorts every token into
//  - accepted: some path takes all its bytes without finishing P's alternative (or finishes
//    it exactly at the token's end), so the token is allowed on any stack with top P;
//  - uncertain: every surviving path finished P's alternative before the token's end, so the
//    rest of the token depends on the stack below (checked per stack at run time);
//  - rejected: everything else (never allowed on such a stack).
// A path that finishes the alternative can go on only with a byte that may follow its rule in
// some context (the rule's FOLLOW set over bytes), so tokens whose next byte cannot are
// rejected here instead of being checked per stack.
// Computed on first use of each position and kept for the grammar's life; positions inside
// long literals have tiny sets, positions inside a string's character class hold most of the
// vocabulary as `accepted` and only the tokens that close the string as `uncertain`.
//
// Thread-safe: Get() locks while it computes a position.
#ifndef TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_
#define TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/token_trie.h"

namespace tandem {

struct PositionTokens {
  // Accepted tokens as ids when few, else as bits over the vocabulary (one of the two).
  std::vector<int32_t> accepted_ids;
  std::vector<uint64_t> accepted_bits;
  // Uncertain tokens in byte order, each with the length of the prefix it shares with the
  // one before it (0 for the first).
  std::vector<int32_t> uncertain;
  std::vector<int32_t> uncertain_shared;
};

class PositionTokenSets {
 public:
  // `grammar` and `trie` must outlive this; `token_bytes` is the trie's vocabulary.
  PositionTokenSets(const Grammar& grammar, const TokenTrie& trie,
                    const std::vector<std::string>& token_bytes);

  // The sets of byte-set position `position`.
  const PositionTokens& Get(int32_t position);

 private:
  std::unique_ptr<PositionTokens> Compute(int32_t position);
  // FIRST and FOLLOW sets over bytes, per rule; rule_of_ per position of the code.
  void ComputeFollow(const Grammar& grammar);

  const TokenTrie& trie_;
  std::vector<ByteSet> follow_;      // per rule: bytes that may come right after it
  std::vector<int32_t> rule_of_;     // per position in grammar.code: its rule
  const std::vector<std::string>& token_bytes_;
  absl::Mutex mutex_;
  GrammarMatcher matcher_;  // guarded by mutex_
  absl::flat_hash_map<int32_t, std::unique_ptr<PositionTokens>> sets_;  // guarded by mutex_
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_
