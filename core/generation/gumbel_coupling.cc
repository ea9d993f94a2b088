#include "core/generation/gumbel_coupling.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/generation/random.h"

namespace tandem {

double GumbelUniform(uint64_t seed, int64_t position, int32_t id) {
  // Two full mixes: (seed, position) first, then the token id, so every triple gets an
  // unrelated number (CounterHash absorbs each key with a full avalanche).
  const uint64_t per_position = CounterHash(seed, position, RandomPurpose::kGumbel);
  const double u = CounterUniform(per_position, id, RandomPurpose::kGumbel);
  // CounterUniform is in [0, 1) on multiples of 2^-53; log(0) would be -inf, so 0 becomes
  // 2^-54 (half the grid step: it keeps the cell's mass, 2^-53, within the first cell).
  return u > 0 ? u : 0x1p-54;
}

int32_t GumbelPick(const DistributionView& p, uint64_t seed, int64_t position) {
  // argmax log p + G = argmax log p - log(-log u) = argmin E / p with E = -log u > 0: the
  // exponential race, the same order with one logarithm per candidate. E is in
  // [2^-53, 37.5] and p a positive float, so E / p is finite and positive.
  int32_t best = -1;
  double best_race = 0;
  for (int64_t e = 0; e < p.size(); ++e) {
    const double mass = p.probability(e);
    if (!(mass > 0)) continue;  // outside the filtered support (NaN included)
    const int32_t id = p.id(e);
    const double race = -std::log(GumbelUniform(seed, position, id)) / mass;
    if (best < 0 || race < best_race) {  // strict: ties keep the lower id
      best = id;
      best_race = race;
    }
  }
  return best;
}

int32_t PickTargetToken(const DistributionView& p, Coupling coupling, uint64_t seed,
                        int64_t position) {
  return coupling == Coupling::kGumbel ? GumbelPick(p, seed, position)
                                       : DrawTargetToken(p, seed, position);
}

absl::StatusOr<AcceptanceResult> AcceptGuessesGumbel(absl::Span<const int32_t> guesses,
                                                     absl::Span<const DistributionView> target,
                                                     uint64_t seed, int64_t first_position) {
  const size_t k = guesses.size();
  if (target.size() != k + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(k, " guesses need one more target distribution, got ", target.size()));
  }
  AcceptanceResult result;
  result.guess_probabilities.reserve(k);
  for (size_t i = 0; i <= k; ++i) {
    const int64_t position = first_position + static_cast<int64_t>(i);
    const int32_t pick = GumbelPick(target[i], seed, position);
    if (pick < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("target distribution ", i, " has no positive mass to pick from"));
    }
    if (i < k) result.guess_probabilities.push_back(target[i].Probability(guesses[i]));
    if (i == k || guesses[i] != pick) {
      result.next_token = pick;
      return result;
    }
    ++result.accepted;
  }
  return result;  // not reached: i == k returns
}

}  // namespace tandem
