// A request's constraint on its output (core/grammar/token_constraint.h) as the halves of a
// speculative round (speculative_round.h), the sessions, the drafters and the round driver
// apply it: the constraint object and the absolute position where the output begins.
//
// The output is what the request generates: the first generated token, at position
// context.size(), is constrained; the context, its last token (the first round's pending
// token) included, is not. Everything syncs by content: before each use the constraint is
// brought to sequence[start, position), so guesses that were walked through and then
// rejected are rolled back by the next call, and a lost state is rebuilt from the sequence.
//
// The rules that keep constrained speculation exact:
//  - Each sampled position's mask applies before the sampler's first step (sampler.h), on
//    the target (every verify row, the bonus row included) and on the draft (its own
//    constraint object, walked through its earlier guesses), so p and q are the constrained
//    distributions and the acceptance rule and Gumbel coupling stay lossless.
//  - A guess the target's constraint refuses has p = 0 and is rejected for certain.
//  - A position where the constraint allows nothing (a dead end) ends the request with
//    kInvalidArgument naming it (DeadEndError), never a draw from an empty set.
//
// Thread-safety: as the TokenConstraint's (one thread at a time).
#ifndef TANDEM_CORE_GENERATION_OUTPUT_CONSTRAINT_H_
#define TANDEM_CORE_GENERATION_OUTPUT_CONSTRAINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/grammar/token_constraint.h"

namespace tandem {

struct OutputConstraint {
  TokenConstraint* constraint = nullptr;  // none: the output is not constrained
  int64_t start = 0;                      // absolute position of the first constrained token

  bool active() const { return constraint != nullptr; }
};

// kInvalidArgument: "the constraint allows no token after N generated tokens" (N = position -
// start, for the token at absolute `position`).
absl::Status DeadEndError(const OutputConstraint& constrained, int64_t position);

// The tokens allowed at position sequence.size() into `mask`: syncs the constraint to
// sequence[start, end) and fills the mask. kInvalidArgument if the sequence ends before
// `start`, the constraint's Sync error as is (a token it refuses), or DeadEndError when it
// allows no token. Requires constrained.active().
absl::Status MaskAt(const OutputConstraint& constrained, absl::Span<const int32_t> sequence,
                    TokenMask* mask);

// The token `mask` allows if it allows exactly one, else -1 (none or several).
int32_t OnlyAllowedToken(const TokenMask& mask);

// How many leading `guesses` after `sequence` the constraint accepts (all when inactive): the
// guesses are cut at the first it refuses. `walked` is scratch.
int64_t AcceptedGuesses(const OutputConstraint& constrained, absl::Span<const int32_t> sequence,
                        absl::Span<const int32_t> guesses, std::vector<int32_t>* walked);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_OUTPUT_CONSTRAINT_H_
