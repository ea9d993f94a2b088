// The TokenConstraint of one request over a compiled grammar (compiled_constraint.h): the
// matcher state after each accepted token (so Sync rolls back by truncating), on a matcher
// shared by the grammar's requests (SharedMatcher), whose node tree makes equal stacks equal
// ids in every request, so the masks computed for a state serve every later request that
// reaches it.
//
// FillMask for a state is the union over its stacks: the tokens the stack's top position
// accepts whatever lies below (PositionTokenSets, shared by all requests of the grammar), plus
// those of the position's uncertain tokens this stack really takes (the rest of each, from
// where a path finished the position's alternative, stepped from the frame below), plus the
// end tokens where the grammar may end.
// After an end token only end tokens are allowed.
//
// Not thread-safe: one per request and model (the shared parts lock).
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/position_token_sets.h"
#include "core/grammar/token_constraint.h"

namespace tandem {

// A grammar's matcher and the masks of the states its requests reached, shared by them.
struct SharedMatcher {
  // Masks kept (then the cache starts over); nodes past which a new SharedMatcher replaces this
  // one for new requests (compiled_constraint.cc).
  static constexpr size_t kMaxMasks = 256;
  static constexpr int64_t kMaxNodes = 1 << 21;

  explicit SharedMatcher(const Grammar& grammar) : matcher(grammar) {}
  absl::Mutex mutex;
  GrammarMatcher matcher ABSL_GUARDED_BY(mutex);
  absl::flat_hash_map<MatcherState, TokenMask> masks ABSL_GUARDED_BY(mutex);
};

// What a GrammarConstraint reads; owned by the CompiledConstraint it was made from.
struct GrammarTables {
  const Grammar* grammar = nullptr;
  const std::vector<std::string>* token_bytes = nullptr;
  const std::vector<int32_t>* end_ids = nullptr;
  const TokenTrie* trie = nullptr;
  PositionTokenSets* positions = nullptr;
};

class GrammarConstraint : public TokenConstraint {
 public:
  // `owner` keeps the tables alive.
  GrammarConstraint(std::shared_ptr<const void> owner, const GrammarTables& tables,
                    std::shared_ptr<SharedMatcher> shared);

  int64_t vocab_size() const override;
  absl::Status Sync(absl::Span<const int32_t> tokens) override;
  void FillMask(TokenMask* mask) override;

 private:
  // The state after `token` from states_.back(); false if the token is not allowed.
  bool Accept(GrammarMatcher& matcher, int32_t token, MatcherState* next);
  bool IsEnd(int32_t token) const;
  void ComputeMask(GrammarMatcher& matcher, const MatcherState& state, TokenMask* mask);
  // Allows the uncertain tokens of `sets` that the single stack `top` takes.
  void AddUncertain(GrammarMatcher& matcher, int32_t top, const PositionTokens& sets,
                    TokenMask* mask);

  std::shared_ptr<const void> owner_;
  GrammarTables tables_;
  std::shared_ptr<SharedMatcher> shared_;
  std::vector<int32_t> tokens_;        // accepted, in order
  std::vector<MatcherState> states_;   // states_[i]: after tokens_[0, i); never empty
  bool ended_ = false;                 // an end token was accepted (only at the back)
  std::vector<int32_t> walk_;          // AddUncertain's interned states by depth
  std::vector<uint8_t> rest_ok_;       // AddUncertain: per rest, whether the frame takes it
  // ComputeMask: frames below stacks resumed so far, with their interned states (-1: none).
  std::vector<std::pair<int32_t, int32_t>> resumed_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_
