// Which tokens a stack's top two frames accept whatever lies below them: the idea behind
// XGrammar's adaptive token-mask cache. For a stack whose top is byte-set position P over a
// frame at position Q (the continuation the top's rule returns to; none when P is alone),
// walking the token trie from StartAt(P, Q) sorts every token into
//  - accepted: some path takes all its bytes without finishing Q's alternative (or finishes
//    it exactly at the token's end), so the token is allowed on any stack with those tops;
//  - uncertain: every surviving path finished P's alternative before the token's end, so the
//    rest of the token depends on the stack below (checked per stack at run time);
//  - rejected: everything else (never allowed on such a stack).
// Two frames rather than one because the top frame is often a one-character rule (a string's
// character) that every longer token leaves. A path that finishes the alternative can go on
// only with a byte that may follow its rule in some context (the rule's FOLLOW set over bytes), so tokens whose next byte cannot are
// rejected here instead of being checked per stack.
// Computed on first use of each position and kept for the grammar's life; positions inside
// long literals have tiny sets, positions inside a string's character class hold most of the
// vocabulary as `accepted` and only the tokens that close the string as `uncertain`.
//
// Bounded: past kMaxBytes of sets the cache starts over (callers keep what they hold).
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

  static constexpr int64_t kMaxBytes = int64_t{16} << 20;

  // The sets of a stack topped by byte-set `position` over a frame at `parent_position` (-1:
  // none).
  std::shared_ptr<const PositionTokens> Get(int32_t position, int32_t parent_position);

 private:
  std::shared_ptr<const PositionTokens> Compute(int32_t position, int32_t parent_position);
  // FIRST and FOLLOW sets over bytes, per rule; rule_of_ per position of the code.
  void ComputeFollow(const Grammar& grammar);

  const TokenTrie& trie_;
  std::vector<ByteSet> follow_;      // per rule: bytes that may come right after it
  std::vector<int32_t> rule_of_;     // per position in grammar.code: its rule
  const std::vector<std::string>& token_bytes_;
  absl::Mutex mutex_;
  GrammarMatcher matcher_;  // guarded by mutex_
  // By (position, parent position).
  absl::flat_hash_map<std::pair<int32_t, int32_t>, std::shared_ptr<const PositionTokens>> sets_;
  int64_t bytes_ = 0;  // held by sets_, roughly
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_
