// Drafter-invariant speculative sampling by Gumbel coupling (Daliri, Musco & Suresh 2024,
// "Coupling without communication and drafter-invariant speculative decoding").
//
// Every token, the draft's guesses and the target's own tokens alike, is the Gumbel-max pick
// of its filtered distribution (the Sampler's: penalty, temperature, top-k, top-p, min-p):
//
//   pick(p, position) = argmax over ids with p(id) > 0 of  log p(id) + G(seed, position, id),
//   G = -log(-log(u)),  u = a counter-based uniform in (0, 1) keyed by (seed, position, id).
//
// The pick is distributed exactly as p (the Gumbel-max trick). The draft and the target read
// the same noise, so the draft's pick equals the target's whenever their distributions are
// close: P(equal) >= (1 - TV) / (1 + TV), TV the total variation distance of p and q. A guess
// is kept iff it equals the target's pick at its position; the first that differs is replaced
// by the target's pick; if all are kept, the bonus is the target's pick at the next position.
// Every emitted token is thus the target's own pick, a function of the seed, the position and
// the target's distribution alone: the output for a seed equals the target alone with that
// seed, whatever the draft, k, pipelining, or a draft that dies mid-request. The target needs
// only the guessed ids, never q.
//
// Greedy (temperature 0) is unchanged: p is one-hot, so the pick is the arg max.
//
// Thread-safe: no state.
#ifndef TANDEM_CORE_GENERATION_GUMBEL_COUPLING_H_
#define TANDEM_CORE_GENERATION_GUMBEL_COUPLING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/generation/acceptance.h"
#include "core/generation/sampler.h"

namespace tandem {

// The uniform number u in (0, 1), both ends excluded, that keys token `id` at `position`:
// CounterUniform's 53-bit grid with 0 moved to 2^-54, from a hash of (seed, position, id).
double GumbelUniform(uint64_t seed, int64_t position, int32_t id);

// The Gumbel-max pick of `p` at absolute `position` (the rule above); ties, which need equal
// scores in double, go to the lower id. -1 only if p has no positive entry.
int32_t GumbelPick(const DistributionView& p, uint64_t seed, int64_t position);

// The target's own token at `position` where no guess decides it (the bonus, each token
// without a draft): DrawTargetToken for Coupling::kStandard, GumbelPick for kGumbel. -1 only
// if p has no mass.
int32_t PickTargetToken(const DistributionView& p, Coupling coupling, uint64_t seed,
                        int64_t position);

// The Gumbel verdict of a round: guesses g1..gk (g1 at `first_position`) against the target's
// p1..p(k+1). Keeps the longest prefix of guesses equal to the target's picks; next_token is
// the target's pick at the first mismatch, or at the position after gk when all are kept.
// guess_probabilities as AcceptGuesses: pi(gi) for every guess tested. kInvalidArgument unless
// target.size() == guesses.size() + 1, or if a distribution it picks from has no mass.
absl::StatusOr<AcceptanceResult> AcceptGuessesGumbel(absl::Span<const int32_t> guesses,
                                                     absl::Span<const DistributionView> target,
                                                     uint64_t seed, int64_t first_position);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_GUMBEL_COUPLING_H_
