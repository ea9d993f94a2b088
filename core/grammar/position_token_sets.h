// Which tokens a stack's top two frames accept whatever lies below them: the idea behind
// XGrammar's adaptive token-mask cache. For a stack whose top is byte-set position P over a
// frame at position Q (the continuation the top's rule returns to; none when P is alone),
// walking the token trie from StartAt(P, Q) sorts every token into
//  - accepted: some path takes all its bytes without finishing Q's alternative (or finishes
//    it exactly at the token's end), so the token is allowed on any stack with those tops;
//  - uncertain: every surviving path finished P's alternative before the token's end, so the
//    rest of the token depends on the stack below (checked per stack at run time from the
//    offsets where those paths finished it);
//  - rejected: everything else (never allowed on such a stack).
// Two frames rather than one because the top frame is often a one-character rule (a string's
// character) that every longer token leaves. A path that finishes the alternative can go on
// only with a byte that may follow its rule in some context (the rule's FOLLOW set over bytes), so tokens whose next byte cannot are
// rejected here instead of being checked per stack.
// A parent frame in a bounded repetition (repeat_chains.h) is walked at the chain's top level
// once, noting per token how many of the chain's items its paths use; the sets of every level
// are filtered from that walk (exact: a level with k items left takes the paths that use at
// most k), one filter per distinct item count, so a maxLength of 200 costs one walk.
// ComputeAll computes the sets of every pair when the constraint is compiled (what its budget
// leaves is computed on first use); they are kept for the grammar's life. Positions inside
// long literals have tiny sets, positions inside a string's character class hold most of the
// vocabulary as `accepted` and only the tokens that close the string as `uncertain`.
//
// Positions with equal sets share one copy. Bounded: past kMaxBytes of sets the cache starts
// over (callers keep what they hold).
//
// Thread-safe: Get() locks while it computes a position.
#ifndef TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_
#define TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_

#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/repeat_chains.h"
#include "core/grammar/token_trie.h"

namespace tandem {

struct PositionTokens {
  // Accepted tokens as ids when few, else as bits over the vocabulary (one of the two).
  std::vector<int32_t> accepted_ids;
  std::vector<uint64_t> accepted_bits;
  // Uncertain tokens: for uncertain[k], the rests of the token after each place where a path
  // finished the alternative (which must follow the frame below), as indices into `rests`:
  // uncertain_rests[rest_begin[k] .. rest_begin[k + 1]).
  std::vector<int32_t> uncertain;
  std::vector<int32_t> rest_begin;
  std::vector<int32_t> uncertain_rests;
  // The distinct rests in byte order, each with the length of the prefix it shares with the one
  // before it (0 for the first), so a check walks each shared prefix once.
  std::vector<std::string> rests;
  std::vector<int32_t> rest_shared;
};

class PositionTokenSets {
 public:
  // `grammar` and `trie` must outlive this; `token_bytes` is the trie's vocabulary.
  PositionTokenSets(const Grammar& grammar, const TokenTrie& trie,
                    const std::vector<std::string>& token_bytes);

  static constexpr int64_t kMaxBytes = int64_t{16} << 20;

  // Computes the sets of every (position, parent position) pair the grammar's stacks can hold
  // (return_positions.h), so that masks need no trie walk, until `budget_seconds` have passed
  // (the rest are computed on first use). Returns how many pairs it computed.
  int64_t ComputeAll(double budget_seconds);

  // How many trie walks have been made (tests: ComputeAll leaves none to do).
  int64_t walks() {
    absl::MutexLock lock(&mutex_);
    return walks_;
  }

  // The sets of a stack topped by byte-set `position` over a frame at `parent_position` (-1:
  // none).
  std::shared_ptr<const PositionTokens> Get(int32_t position, int32_t parent_position);

 private:
  // What a walk over the trie records per token, in the trie's (byte) order: the fewest items
  // of the chain being counted an accepting path uses (kNever: no accepting path), and the
  // fewest an escaping path had used when it escaped (kNever: none). Without a chain every
  // count is 1.
  static constexpr int32_t kNever = INT32_MAX;
  struct WalkedToken {
    int32_t token;
    int32_t accept_items;
    int32_t escape_items;
    // The escapes on the token's path: walked_escapes_[escapes_begin .. escapes_end).
    int32_t escapes_begin, escapes_end;
  };
  struct Escape {
    int32_t offset;  // bytes taken before the alternative finished
    int32_t items;   // the fewest items a path finishing there had used
  };
  struct ChainWalk {
    std::vector<int32_t> item_counts;  // 0 and the distinct counts up to the top level, ascending
    // Sets by item count (a level takes those of the largest count at most it).
    absl::flat_hash_map<int32_t, std::shared_ptr<const PositionTokens>> levels;
  };

  // Walks the trie from StartAt(position, parent_position) into walked_; with `chain_top` >= 0
  // counts the items of that chain (whose top level is `top_level`) per path.
  void Walk(int32_t position, int32_t parent_position, int32_t chain_top, int32_t top_level);
  // The distinct rests (bytes after an escape) of the tokens of walked_ that may be uncertain,
  // sorted, and rest_of[p] for their p-th (token, escape) pair in order (tokens at one trie
  // node share their path's escapes, not their rests).
  struct RestTable {
    std::vector<absl::string_view> rests;
    std::vector<int32_t> rest_of;
  };
  RestTable MakeRestTable(const std::vector<const WalkedToken*>& maybe_uncertain) const;
  // Adds to `sets` the tokens of `maybe_uncertain` uncertain at a level of `items` items, with
  // the rests after their escapes open to it.
  void AddUncertainOfLevel(int32_t items, const std::vector<const WalkedToken*>& maybe_uncertain,
                           const RestTable& table, std::vector<int32_t>* level_rest_scratch,
                           PositionTokens* sets) const;
  // The sets of walked_ for levels with each of `item_counts` items left (ascending).
  std::vector<std::shared_ptr<const PositionTokens>> FilterLevels(
      const std::vector<int32_t>& item_counts) const;
  // The sets of (position, parent) when the parent frame is in a repetition chain; null if it
  // is not (or the chain's levels cannot share a walk).
  std::shared_ptr<const PositionTokens> FromChain(int32_t position, int32_t parent_position);
  // The top rule of the chain whose walk serves a frame at `parent_position`, or -1.
  int32_t ChainTop(int32_t parent_position) const;
  // The chain item stack `top` is in (1: the first).
  int32_t StackItems(int32_t top, int32_t chain_top, int32_t top_level) const;
  // The fewest chain items the stacks of interned state `id` use (kNever: none).
  int32_t ItemsUsed(int32_t id, int32_t chain_top, int32_t top_level);
  // The fewest items of the paths of interned state `id` that finish the alternative with
  // `byte` (kNever: none).
  int32_t EscapeItems(int32_t id, uint8_t byte, int32_t chain_top, int32_t top_level);
  // `sets`, or equal ones kept before (many positions share their sets).
  std::shared_ptr<const PositionTokens> Keep(std::shared_ptr<const PositionTokens> sets);
  int64_t held_bytes() {
    absl::MutexLock lock(&mutex_);
    return bytes_;
  }
  // FIRST and FOLLOW sets over bytes, per rule.
  void ComputeFollow(const Grammar& grammar);

  const TokenTrie& trie_;
  RepeatChains chains_;
  std::vector<ByteSet> follow_;      // per rule: bytes that may come right after it
  const std::vector<std::string>& token_bytes_;
  absl::Mutex mutex_;
  GrammarMatcher matcher_;  // guarded by mutex_
  // By (position, parent position).
  absl::flat_hash_map<std::pair<int32_t, int32_t>, std::shared_ptr<const PositionTokens>> sets_;
  // Chain walks' sets by the chain top's (position, parent position).
  absl::flat_hash_map<std::pair<int32_t, int32_t>, ChainWalk> chain_walks_;
  std::vector<int32_t> items_used_;        // ItemsUsed per interned state, for walk walk_stamp_
  std::vector<int32_t> items_used_stamp_;
  absl::flat_hash_map<uint64_t, int32_t> escape_items_;  // EscapeItems of this walk
  // The last walk and its scratch (kept to spare the allocations).
  std::vector<WalkedToken> walked_;
  std::vector<Escape> walked_escapes_;
  std::vector<int32_t> state_;
  std::vector<uint8_t> path_;
  int32_t walk_stamp_ = 0;
  int64_t walks_ = 0;
  // The distinct sets held, by a hash of their contents.
  absl::flat_hash_map<uint64_t, std::vector<std::shared_ptr<const PositionTokens>>> distinct_;
  int64_t bytes_ = 0;  // held by sets_ and chain_walks_, roughly
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_POSITION_TOKEN_SETS_H_
