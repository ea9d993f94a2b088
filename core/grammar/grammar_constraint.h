// The TokenConstraint of one request over a compiled grammar (compiled_constraint.h): its own
// matcher, the matcher state after each accepted token (so Sync rolls back by truncating),
// and the masks it has computed, by state.
//
// FillMask for a state is the union over its stacks: the tokens the stack's top position
// accepts whatever lies below (PositionTokenSets, shared by all requests of the grammar), plus
// those of the position's uncertain tokens this stack really takes (walked in byte order,
// reusing the states of shared prefixes), plus the end tokens where the grammar may end.
// After an end token only end tokens are allowed.
//
// Not thread-safe: one per request and model.
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/position_token_sets.h"
#include "core/grammar/token_constraint.h"

namespace tandem {

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
  // At most this many masks are kept per request (then the cache starts over).
  static constexpr size_t kMaxCachedMasks = 256;

  // `owner` keeps the tables alive.
  GrammarConstraint(std::shared_ptr<const void> owner, const GrammarTables& tables);

  int64_t vocab_size() const override;
  absl::Status Sync(absl::Span<const int32_t> tokens) override;
  void FillMask(TokenMask* mask) override;

 private:
  // The state after `token` from states_.back(); false if the token is not allowed.
  bool Accept(int32_t token, MatcherState* next);
  bool IsEnd(int32_t token) const;
  void ComputeMask(const MatcherState& state, TokenMask* mask);
  // Allows the uncertain tokens of `sets` that the single stack `top` takes.
  void AddUncertain(int32_t top, const PositionTokens& sets, TokenMask* mask);

  std::shared_ptr<const void> owner_;
  GrammarTables tables_;
  GrammarMatcher matcher_;
  std::vector<int32_t> tokens_;        // accepted, in order
  std::vector<MatcherState> states_;   // states_[i]: after tokens_[0, i); never empty
  bool ended_ = false;                 // an end token was accepted (only at the back)
  absl::flat_hash_map<MatcherState, TokenMask> masks_;
  std::vector<MatcherState> walk_;     // AddUncertain's states by depth
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_CONSTRAINT_H_
