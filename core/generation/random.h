// Counter-based randomness: every random number of a generation is a pure function of
// (request seed, absolute position, purpose), so the output for a seed never depends on the
// topology (in-process or over gRPC), on timing, or on other sessions (docs/architecture.md).
//
//   double u = CounterUniform(config.seed, position, RandomPurpose::kAcceptTest);
//
// There is no generator state to carry between calls or processes. Thread-safe.
#ifndef TANDEM_CORE_GENERATION_RANDOM_H_
#define TANDEM_CORE_GENERATION_RANDOM_H_

#include <cstdint>

namespace tandem {

// Why a random number is drawn. Each purpose is an independent stream, so the draft's draw
// and the target's accept test at one position never share a number.
enum class RandomPurpose : uint64_t {
  kDraftDraw = 1,   // the draft samples its guess for a position
  kAcceptTest = 2,  // the target tests a guess: keep it if u < p(g) / q(g)
  kResidual = 3,    // the replacement for a rejected guess, from max(0, p - q)
  kBonus = 4,       // the target's own draw where no guess is tested: the extra token when
                    // every guess was kept, from p(k+1), and every token without a draft
                    // (DrawTargetToken in acceptance.h: in-process and remote alike)
  kSample = 5,      // Sampler::Sample's default stream (not used by the sessions)
  kGumbel = 6,      // the Gumbel noise of one token id at a position (gumbel_coupling.h)
};

// A 64-bit hash of (seed, position, purpose) with full avalanche.
uint64_t CounterHash(uint64_t seed, int64_t position, RandomPurpose purpose);

// A uniform double in [0, 1) with 53 random bits, from CounterHash.
double CounterUniform(uint64_t seed, int64_t position, RandomPurpose purpose);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_RANDOM_H_
