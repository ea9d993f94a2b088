// The acceptance rule of speculative sampling, as one pure function shared by
// SpeculativeSession and (later) the coordinator's target worker, so in-process and
// distributed speculation give the same tokens for the same seed.
//
// Given guesses g1..gk drawn from the draft's distributions q1..qk and the target's
// distributions p1..p(k+1) for the same positions, guess i is kept with probability
// min(1, pi(gi) / qi(gi)); the first rejected guess is replaced by a draw from
// max(0, pi - qi) renormalised (aligned by token id), and the round ends; if every guess is
// kept, a bonus token is drawn from p(k+1). The tokens this yields are distributed exactly as
// sampling from p alone (Leviathan et al. 2023, Chen et al. 2023): speculation is lossless.
// Greedy is the special case of one-hot p and q: the output is the target's arg max.
//
// Random numbers are counter-based (random.h): the accept test and the replacement of guess i
// use its absolute position, the bonus uses the position after gk.
//
// Thread-safe: no state.
#ifndef TANDEM_CORE_GENERATION_ACCEPTANCE_H_
#define TANDEM_CORE_GENERATION_ACCEPTANCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/generation/sampler.h"

namespace tandem {

// A read-only view of one position's distribution, dense over a vocabulary or sparse (ids
// strictly increasing). The viewed memory must outlive the view.
class DistributionView {
 public:
  // probabilities[id] for every id of the vocabulary.
  static DistributionView Dense(absl::Span<const float> probabilities) {
    return DistributionView({}, probabilities, /*dense=*/true);
  }
  static DistributionView Sparse(const SparseDistribution& distribution) {
    return DistributionView(distribution.ids, distribution.probabilities, /*dense=*/false);
  }

  // The probability of `id`; 0 for ids outside the vocabulary or the support.
  float Probability(int32_t id) const;
  // Entries in increasing id order (dense: every id, zeros included).
  int64_t size() const { return static_cast<int64_t>(probabilities_.size()); }
  int32_t id(int64_t entry) const { return dense_ ? static_cast<int32_t>(entry) : ids_[entry]; }
  float probability(int64_t entry) const { return probabilities_[entry]; }

 private:
  DistributionView(absl::Span<const int32_t> ids, absl::Span<const float> probabilities, bool dense)
      : ids_(ids), probabilities_(probabilities), dense_(dense) {}

  absl::Span<const int32_t> ids_;
  absl::Span<const float> probabilities_;
  bool dense_;
};

// kInvalidArgument (saying what is wrong) unless `distribution` is a usable sparse q or p:
// non-empty, ids and probabilities of the same length, ids strictly increasing in
// [0, vocab_size), probabilities finite and non-negative with a positive sum. For data that
// arrives over the wire, before AcceptGuesses sees it.
absl::Status ValidateSparseDistribution(const SparseDistribution& distribution, int64_t vocab_size);

// How far from 1 a draft distribution's total mass may be. A q the draft's own Sampler made
// (float probabilities, each rounded relative to itself) is within 2^-24 of 1 (about 6e-8);
// 1e-3 leaves room for any honest float encoding and refuses everything else.
inline constexpr double kDraftMassTolerance = 1e-3;

// The draft distributions of a Verify request, checked and made exact for AcceptGuesses.
// kInvalidArgument naming the guess index and what is wrong unless there is one q per guess
// and every q passes ValidateSparseDistribution (ids in [0, vocab_size)), has total mass
// within kDraftMassTolerance of 1, and gives its guess a positive probability (a guess the
// draft could not have drawn would be kept with certainty). On success, every q renormalised
// (each probability divided by its total in double, rounded to float), so the q that
// AcceptGuesses reads is the one that was validated.
absl::StatusOr<std::vector<SparseDistribution>> ValidateDraftDistributions(
    absl::Span<const int32_t> guesses, absl::Span<const SparseDistribution> q, int64_t vocab_size);

struct AcceptanceInput {
  absl::Span<const int32_t> guesses;          // g1..gk, k >= 0
  absl::Span<const DistributionView> draft;   // q1..qk, the distributions gi was drawn from
  absl::Span<const DistributionView> target;  // p1..p(k+1) at the same positions
  uint64_t seed = 0;                          // the request's seed
  int64_t first_position = 0;                 // absolute position of g1
};

struct AcceptanceResult {
  int32_t accepted = 0;     // guesses kept, 0..k
  int32_t next_token = -1;  // the replacement of guess accepted + 1, or the bonus token
  // pi(gi) for every guess tested: the kept ones, then the rejected one if any.
  std::vector<float> guess_probabilities;
};

// The target's own draw from `p` at absolute `position`, where no guess is tested: the bonus
// token after every guess was kept, and each token of plain sampling without a draft
// (Session in-process; a verify with no guesses on a worker). One rule for all of them — the
// kBonus stream and a draw by running total over p — so seeded output without a draft is the
// same in-process and through a coordinator. -1 only if p has no mass.
int32_t DrawTargetToken(const DistributionView& p, uint64_t seed, int64_t position);

// Applies the rule. A guess outside p's support (e.g. an id beyond the target's vocabulary) is
// rejected for certain. If rounding leaves max(0, p - q) with no mass after a rejection, the
// replacement is drawn from p itself. kInvalidArgument unless draft.size() == guesses.size()
// and target.size() == guesses.size() + 1, or if a target distribution it must draw from has
// no positive mass (Sampler::Distribution never gives one; ValidateSparseDistribution
// refuses one from the wire).
absl::StatusOr<AcceptanceResult> AcceptGuesses(const AcceptanceInput& input);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_ACCEPTANCE_H_
