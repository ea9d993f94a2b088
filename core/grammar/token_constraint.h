// A constraint on the tokens a request generates, as the sampler and the speculative round
// see it: which tokens may come next after the constrained output so far. The grammar
// engine implements it (grammar_constraint.h); tests implement simple ones.
//
// The state syncs by content, as caches sync by position: Sync(tokens) keeps the longest
// prefix of `tokens` the constraint has already accepted, rolls the rest back and accepts the
// new ones. So a verify pass walks it through the guesses and the next call simply syncs back
// to what was committed.
//
// Not thread-safe: one constraint per request and model (the target's and the draft's are
// separate objects).
#ifndef TANDEM_CORE_GRAMMAR_TOKEN_CONSTRAINT_H_
#define TANDEM_CORE_GRAMMAR_TOKEN_CONSTRAINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tandem {

// Bits over a vocabulary: token t is allowed iff bit t % 64 of words[t / 64] is set.
struct TokenMask {
  std::vector<uint64_t> words;

  void Resize(int64_t vocab_size) { words.assign((vocab_size + 63) / 64, 0); }
  bool Allowed(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token / 64) < words.size() &&
           ((words[token / 64] >> (token % 64)) & 1);
  }
  void Allow(int32_t token) { words[token / 64] |= uint64_t{1} << (token % 64); }
  int64_t Count() const {
    int64_t n = 0;
    for (uint64_t w : words) n += __builtin_popcountll(w);
    return n;
  }
};

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  virtual int64_t vocab_size() const = 0;
  // Brings the state to after `tokens` (the constrained output so far, in order).
  // kInvalidArgument naming the index and the id of the first token the constraint does not
  // allow where it stands; the state then holds the tokens before it.
  virtual absl::Status Sync(absl::Span<const int32_t> tokens) = 0;
  // The tokens allowed after the synced output, into `mask` (resized to the vocabulary). The
  // end-of-output tokens (EOS, end of turn) are allowed exactly where the constraint may end;
  // other special tokens never. No bit set: a dead end.
  virtual void FillMask(TokenMask* mask) = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_TOKEN_CONSTRAINT_H_
