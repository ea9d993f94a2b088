// Test-only: TokenConstraints whose allowed set is a plain function of the output so far, for
// the tests of constrained sampling and speculation (the grammar engine's constraint is tested
// in core/grammar). RuleConstraint holds the accepted output and syncs by content as the
// interface says; the factories below make the rules the tests need:
//  - ModuloConstraint: a token is allowed iff its id is congruent to a hash of the output so far
//    (modulo m), so about 1/m of the vocabulary, a different third at every step: p and q are
//    masked far from the unconstrained distributions. The end ids only in "accepting" states.
//  - ForcingConstraint: the modulo rule, but at two positions of every five exactly one token is
//    allowed (a function of the previous token), and optionally only the end ids at one
//    position: forced tokens, a forced end.
//  - DeadEndConstraint: the modulo rule until `dead_at` tokens, then nothing.
#ifndef TANDEM_CORE_GENERATION_CONSTRAINT_TEST_UTIL_H_
#define TANDEM_CORE_GENERATION_CONSTRAINT_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/grammar/token_constraint.h"

namespace tandem::testing {

class RuleConstraint : public TokenConstraint {
 public:
  // Whether `token` may follow `output` (the constrained tokens so far).
  using Rule = std::function<bool(absl::Span<const int32_t> output, int32_t token)>;

  RuleConstraint(int64_t vocab_size, Rule rule) : vocab_size_(vocab_size), rule_(std::move(rule)) {}

  int64_t vocab_size() const override { return vocab_size_; }

  absl::Status Sync(absl::Span<const int32_t> tokens) override {
    ++syncs_;
    size_t keep = 0;
    while (keep < accepted_.size() && keep < tokens.size() && accepted_[keep] == tokens[keep]) {
      ++keep;
    }
    accepted_.resize(keep);
    for (size_t i = keep; i < tokens.size(); ++i) {
      if (!Allows(tokens[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("output token ", i, " (id ", tokens[i], ") is not allowed there"));
      }
      accepted_.push_back(tokens[i]);
    }
    return absl::OkStatus();
  }

  void FillMask(TokenMask* mask) override {
    ++masks_;
    mask->Resize(vocab_size_);
    for (int32_t t = 0; t < vocab_size_; ++t) {
      if (rule_(accepted_, t)) mask->Allow(t);
    }
  }

  // Whether `tokens` is an output the rule allows, token by token.
  bool AllowsOutput(absl::Span<const int32_t> tokens) { return Sync(tokens).ok(); }

  absl::Span<const int32_t> accepted() const { return accepted_; }
  int64_t syncs() const { return syncs_; }
  int64_t masks() const { return masks_; }

 private:
  bool Allows(int32_t token) const {
    return token >= 0 && token < vocab_size_ && rule_(accepted_, token);
  }

  int64_t vocab_size_;
  Rule rule_;
  std::vector<int32_t> accepted_;
  int64_t syncs_ = 0;
  int64_t masks_ = 0;
};

// Ids below this are control tokens in the tests' vocabularies (unk, bos, eos): never allowed
// but as end ids.
inline constexpr int32_t kFirstTextToken = 3;

// The residue the modulo rule allows after `output`: a hash of its ids and its length.
inline int32_t ModuloResidue(absl::Span<const int32_t> output, int32_t m) {
  uint64_t h = 7 * output.size();
  for (int32_t t : output) h = h * 31 + static_cast<uint64_t>(t);
  return static_cast<int32_t>(h % static_cast<uint64_t>(m));
}

inline bool IsEndId(absl::Span<const int32_t> end_ids, int32_t token) {
  return std::find(end_ids.begin(), end_ids.end(), token) != end_ids.end();
}

inline bool ModuloAllows(absl::Span<const int32_t> output, int32_t token, int32_t m,
                         const std::vector<int32_t>& end_ids) {
  if (IsEndId(end_ids, token)) return output.size() % 6 == 5;  // the accepting states
  return token >= kFirstTextToken && token % m == ModuloResidue(output, m);
}

inline std::unique_ptr<RuleConstraint> ModuloConstraint(int64_t vocab_size, int32_t m,
                                                        std::vector<int32_t> end_ids) {
  return std::make_unique<RuleConstraint>(
      vocab_size, [m, end_ids](absl::Span<const int32_t> output, int32_t token) {
        return ModuloAllows(output, token, m, end_ids);
      });
}

// The token forced after `output` at positions 1 and 2 of every five (after the first token,
// so that it depends on the previous one).
inline int32_t ForcedToken(absl::Span<const int32_t> output, int64_t vocab_size) {
  const int64_t text = vocab_size - kFirstTextToken;
  return kFirstTextToken + static_cast<int32_t>((output.back() * 37 + 11 * output.size()) % text);
}

inline std::unique_ptr<RuleConstraint> ForcingConstraint(int64_t vocab_size, int32_t m,
                                                         std::vector<int32_t> end_ids,
                                                         int64_t end_at = -1) {
  return std::make_unique<RuleConstraint>(
      vocab_size,
      [vocab_size, m, end_ids, end_at](absl::Span<const int32_t> output, int32_t token) {
        const int64_t n = static_cast<int64_t>(output.size());
        if (n == end_at) return IsEndId(end_ids, token);
        if (n % 5 == 1 || n % 5 == 2) return token == ForcedToken(output, vocab_size);
        return ModuloAllows(output, token, m, end_ids);
      });
}

inline std::unique_ptr<RuleConstraint> DeadEndConstraint(int64_t vocab_size, int32_t m,
                                                         int64_t dead_at) {
  return std::make_unique<RuleConstraint>(
      vocab_size, [m, dead_at](absl::Span<const int32_t> output, int32_t token) {
        return static_cast<int64_t>(output.size()) < dead_at && ModuloAllows(output, token, m, {});
      });
}

}  // namespace tandem::testing

#endif  // TANDEM_CORE_GENERATION_CONSTRAINT_TEST_UTIL_H_
