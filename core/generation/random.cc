#include "core/generation/random.h"

namespace tandem {
namespace {

// SplitMix64's finaliser (Stafford's Mix13): a bijection on 64 bits in which every input bit
// flips each output bit with probability close to 1/2.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // 2^64 / phi, SplitMix64's increment

}  // namespace

uint64_t CounterHash(uint64_t seed, int64_t position, RandomPurpose purpose) {
  // Each key is absorbed by a full mix, so (seed, position, purpose) triples that differ in
  // any field give unrelated outputs (unlike xor-ing the fields together before one mix).
  uint64_t h = Mix(seed + kGolden);
  h = Mix(h ^ (static_cast<uint64_t>(position) + kGolden));
  h = Mix(h ^ (static_cast<uint64_t>(purpose) * kGolden));
  return h;
}

double CounterUniform(uint64_t seed, int64_t position, RandomPurpose purpose) {
  // The top 53 bits fill a double's mantissa exactly: multiples of 2^-53 in [0, 1).
  return static_cast<double>(CounterHash(seed, position, purpose) >> 11) * 0x1.0p-53;
}

}  // namespace tandem
