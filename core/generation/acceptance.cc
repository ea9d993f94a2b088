#include "core/generation/acceptance.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/generation/random.h"

namespace tandem {
namespace {

// Draws an id of `p` with weight max(0, p - q) (or p alone when `q` is null), by
// the running total: two passes over p's support, nothing allocated. -1 if no weight.
int32_t DrawResidual(const DistributionView& p, const DistributionView* q, double uniform) {
  const auto weight = [&](int64_t entry) -> double {
    const double mass = p.probability(entry);
    if (!(mass > 0)) return 0.0;  // NaN and negative entries are never drawn
    if (q == nullptr) return mass;
    return std::max(0.0, mass - static_cast<double>(q->Probability(p.id(entry))));
  };
  double total = 0;
  for (int64_t e = 0; e < p.size(); ++e) total += weight(e);
  if (!(total > 0)) return -1;
  const double threshold = uniform * total;
  double running = 0;
  int32_t last = -1;
  for (int64_t e = 0; e < p.size(); ++e) {
    const double w = weight(e);
    if (w <= 0) continue;
    running += w;
    last = p.id(e);
    if (running > threshold) break;
  }
  return last;
}

absl::Status NoMass(size_t row) {
  return absl::InvalidArgumentError(
      absl::StrCat("target distribution ", row, " has no positive mass to draw from"));
}

}  // namespace

int32_t DrawTargetToken(const DistributionView& p, uint64_t seed, int64_t position) {
  return DrawResidual(p, nullptr, CounterUniform(seed, position, RandomPurpose::kBonus));
}

float DistributionView::Probability(int32_t id) const {
  if (dense_) {
    return id >= 0 && id < size() ? probabilities_[id] : 0.0f;
  }
  const auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  return it != ids_.end() && *it == id ? probabilities_[it - ids_.begin()] : 0.0f;
}

absl::Status ValidateSparseDistribution(const SparseDistribution& distribution,
                                        int64_t vocab_size) {
  const auto& ids = distribution.ids;
  const auto& probabilities = distribution.probabilities;
  if (ids.empty()) return absl::InvalidArgumentError("distribution has no tokens");
  if (ids.size() != probabilities.size()) {
    return absl::InvalidArgumentError(absl::StrCat("distribution has ", ids.size(), " ids but ",
                                                   probabilities.size(), " probabilities"));
  }
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("distribution token id ", ids[i], " is outside [0, ", vocab_size, ")"));
    }
    if (i > 0 && ids[i] <= ids[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("distribution token ids must be strictly increasing, got ", ids[i - 1],
                       " then ", ids[i]));
    }
    if (!std::isfinite(probabilities[i]) || probabilities[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("distribution probability of token ", ids[i], " is ", probabilities[i]));
    }
    total += probabilities[i];
  }
  if (!(total > 0)) return absl::InvalidArgumentError("distribution has no mass");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SparseDistribution>> ValidateDraftDistributions(
    absl::Span<const int32_t> guesses, absl::Span<const SparseDistribution> q, int64_t vocab_size) {
  if (guesses.size() != q.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(guesses.size(), " guesses but ", q.size(), " draft distributions"));
  }
  std::vector<SparseDistribution> out(q.begin(), q.end());
  for (size_t i = 0; i < q.size(); ++i) {
    const auto invalid = [i](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("guess ", i, ": ", what));
    };
    if (absl::Status valid = ValidateSparseDistribution(q[i], vocab_size); !valid.ok()) {
      return invalid(valid.message());
    }
    double total = 0;
    for (float probability : q[i].probabilities) total += probability;
    if (!(std::abs(total - 1.0) <= kDraftMassTolerance)) {
      return invalid(absl::StrCat("draft distribution has total mass ", total, ", more than ",
                                  kDraftMassTolerance, " away from 1"));
    }
    if (!(DistributionView::Sparse(q[i]).Probability(guesses[i]) > 0)) {
      return invalid(
          absl::StrCat("draft distribution gives the guess ", guesses[i], " no probability"));
    }
    for (float& probability : out[i].probabilities) {
      probability = static_cast<float>(probability / total);
    }
  }
  return out;
}

absl::StatusOr<AcceptanceResult> AcceptGuesses(const AcceptanceInput& input) {
  const size_t k = input.guesses.size();
  if (input.draft.size() != k || input.target.size() != k + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(k, " guesses need as many draft and one more target distributions, got ",
                     input.draft.size(), " and ", input.target.size()));
  }
  AcceptanceResult result;
  result.guess_probabilities.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    const int64_t position = input.first_position + static_cast<int64_t>(i);
    const int32_t guess = input.guesses[i];
    const double p = input.target[i].Probability(guess);
    const double q = input.draft[i].Probability(guess);
    result.guess_probabilities.push_back(static_cast<float>(p));
    // Keep with probability min(1, p / q): u < p / q, written without dividing by q.
    const double u = CounterUniform(input.seed, position, RandomPurpose::kAcceptTest);
    if (u * q < p) {
      ++result.accepted;
      continue;
    }
    const double v = CounterUniform(input.seed, position, RandomPurpose::kResidual);
    result.next_token = DrawResidual(input.target[i], &input.draft[i], v);
    // max(0, p - q) has mass whenever a rejection is possible (p(g) < q(g) means q puts its
    // excess somewhere p does not); only rounding can empty it, and then p is the answer.
    if (result.next_token < 0) result.next_token = DrawResidual(input.target[i], nullptr, v);
    if (result.next_token < 0) return NoMass(i);
    return result;
  }
  result.next_token = DrawTargetToken(input.target[k], input.seed,
                                      input.first_position + static_cast<int64_t>(k));
  if (result.next_token < 0) return NoMass(k);
  return result;
}

}  // namespace tandem
