// The sampler: turns one position's logits into a token, in Hugging Face's order on a copy of
// the logits: (1) repetition penalty over the last `penalty_window` context tokens,
// (2) OpenAI's additive steps: logit_bias and the presence and frequency penalties over the
// generated tokens (context[output_start..]), (3) temperature, (4) top-k, (5) top-p,
// (6) min-p; then a draw from what is left.
//
//   ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(config, vocab_size));
//   int32_t token = sampler.Sample(logits, context, position);
//
// A mask of allowed tokens (a constrained output: output_constraint.h) may be given to each
// call. It applies before the first step: a token it does not allow reads as logit -inf, so it
// is never kept, and the steps rank, weigh and draw among the allowed tokens exactly as over a
// vocabulary of only those (greedy: the arg max of the allowed tokens).
//
// Probabilities stay unnormalised relative to the best candidate, which gets exactly 1:
// w = exp((logit - best) / T). Min-p is then a plain comparison with `min_p`, and a draw needs
// only the running total. Ranking (top-k, top-p) compares logits and breaks ties by the lower
// token id. Temperature 0 is greedy: the arg max, lowest id on ties, whatever the filters.
//
// The exact numeric rules, which keep every result finite and the candidate set non-empty for
// any logits and any settings Create accepts (sampler_reference_test models them one by one):
//  - Non-finite logits: NaN reads as -inf, +inf as the largest float. A -inf logit is never
//    kept; if no logit is finite, all mass goes to id 0 (greedy on the lowest id).
//  - Mask: a token the mask does not allow (ids beyond its words included) reads as -inf after
//    the penalty (which keeps -inf, so this is the mask applied first). If no allowed logit is
//    finite, all mass goes to the lowest allowed id. A mask that allows no id of the
//    vocabulary (a dead end) leaves no candidate: the distribution is all zeros (sparse:
//    empty) and Sample() returns -1. The callers report a dead end before sampling
//    (output_constraint.h); nothing puts mass on a token the mask refuses.
//  - Penalty: logit / penalty (logit > 0) or logit * penalty (otherwise), computed in double,
//    clamped to [-FLT_MAX, FLT_MAX] and rounded to float (-inf stays -inf). So 1e-38 and 1e38
//    are computable: the result saturates instead of becoming inf (and inf - inf = NaN).
//  - Additive (OpenAI's logit_bias, presence_penalty, frequency_penalty), after the penalty,
//    for each id with a bias b (0 if none) or a count c > 0 of occurrences in
//    context[output_start..] (the generated tokens; ids outside the vocabulary count for
//    nothing): -inf stays -inf; b == -100 bans the id (it reads as -inf, so the non-finite
//    rules apply: were every id banned, all mass would go to the lowest (allowed) id);
//    otherwise
//    float(clamp(((double(l) + b) - presence * (c > 0)) - double(frequency) * c, +-FLT_MAX)).
//    Ids of logit_bias outside the vocabulary are ignored (a draft with a smaller vocabulary
//    has no logit for them; the coordinator refuses them against the target's).
//  - Weights: w = float(exp((double(logit) - double(best)) / double(T))), so the best gets
//    exactly 1 and every w is in [0, 1]; a w below kMinSamplerWeight (2^-64) becomes 0. The
//    tokens this drops carry less than vocab * 2^-64 of the mass, which changes no kept
//    token's float probability by more than rounding, and it keeps every kept probability
//    w / total a normal float (so the sparse form and the dense form's non-zeros agree).
//  - Top-p: M = the sum of the top-k survivors' w in increasing id order (double); keep the
//    smallest prefix in rank order whose running double sum is >= top_p * M (the mass
//    exactly reached counts as reached); if rounding leaves every prefix below, keep all.
//  - Min-p: keep w >= min_p * w_best = min_p (a weight exactly at the threshold is kept).
//  - The best candidate survives every step (rank 1, weight 1 >= any min_p < 1), so the
//    kept set is never empty and Sample() always returns an id in [0, vocab) (a masked id
//    the mask allows), unless the mask allows none.
//  - Probabilities: float(w / total), total the double sum of the kept weights.
//
// For speculation, Distribution() gives the filtered, normalised probabilities densely over
// the vocabulary or sparsely (the surviving ids in increasing order, as on the wire), and
// Draw() samples from any non-negative weights. Sample() is Draw() over the same weights.
//
// All scratch is sized to the vocabulary by Create(): Sample() allocates nothing.
// Thread-safety: a Sampler is used by one thread at a time (it owns mutable scratch).
#ifndef TANDEM_CORE_GENERATION_SAMPLER_H_
#define TANDEM_CORE_GENERATION_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/generation/random.h"
#include "core/grammar/token_constraint.h"

namespace tandem {

// Weights below this (relative to the best candidate's 1) are dropped; see the rules above.
inline constexpr float kMinSamplerWeight = 0x1p-64f;

// How a speculative round couples the draft's guesses with the target's tokens.
enum class Coupling {
  kStandard,  // the p/q rule of acceptance.h: keep g with probability min(1, p(g) / q(g))
  kGumbel,    // both pick by Gumbel-max over shared noise (gumbel_coupling.h): drafter-invariant
};

// One entry of SamplerConfig::logit_bias.
struct LogitBias {
  int32_t token = 0;  // >= 0
  float bias = 0;     // in [-kMaxLogitBias, kMaxLogitBias]; -kMaxLogitBias bans the token
  bool operator==(const LogitBias& o) const { return token == o.token && bias == o.bias; }
};

// OpenAI's ranges: |logit_bias| <= 100, |presence_penalty|, |frequency_penalty| <= 2.
inline constexpr float kMaxLogitBias = 100.0f;
inline constexpr float kMaxOpenAiPenalty = 2.0f;

// Sampling settings. The defaults disable every filter: plain softmax sampling at T = 1.
struct SamplerConfig {
  float temperature = 1.0f;         // >= 0 and finite; 0 is greedy
  int32_t top_k = 0;                // keep the k best; 0 disables; >= 0
  float top_p = 1.0f;               // keep the smallest set reaching this mass; in (0, 1]
  float min_p = 0.0f;               // drop w < min_p (relative to the best); in [0, 1)
  float repetition_penalty = 1.0f;  // > 0; 1 disables
  int32_t penalty_window = 64;      // context tokens the penalty looks at; >= 0
  // OpenAI's additive steps (the rules above). logit_bias: token ids strictly increasing.
  std::vector<LogitBias> logit_bias;
  float presence_penalty = 0.0f;   // in [-2, 2]; subtracted once from a generated token's logit
  float frequency_penalty = 0.0f;  // in [-2, 2]; subtracted once per occurrence
  // The absolute position of the first generated token (the prompt's length): the presence
  // and frequency penalties count context[output_start..]. Set per request by whoever knows
  // the prompt (Session::Generate, SpeculativeSession::Generate, the coordinator, which sends
  // it to its workers with every draft and verify call); >= 0.
  int64_t output_start = 0;
  uint64_t seed = 0;                // keys the counter-based random stream
  // How speculation draws guesses and the target's tokens (Sample() does not read it).
  Coupling coupling = Coupling::kStandard;
};

// A distribution in sparse form: the ids that survived the filters, strictly increasing, and
// their normalised probabilities (one entry with 1 when greedy). Mirrors the wire's
// tandem.v1.SparseDistribution, float probabilities included.
struct SparseDistribution {
  std::vector<int32_t> ids;
  std::vector<float> probabilities;
};

// kInvalidArgument naming the field: a negative or non-finite temperature, a negative
// top_k, top_p outside (0, 1], min_p outside [0, 1), a non-positive or non-finite
// repetition_penalty, a negative penalty_window, a logit_bias entry with a negative id (or
// ids not strictly increasing) or a bias outside [-100, 100] (NaN included), a
// presence_penalty or frequency_penalty outside [-2, 2], a negative output_start, or a
// non-positive vocab_size. Ids beyond the vocabulary are not refused here (a draft worker's
// vocabulary may be smaller than the ids the request names): see CheckLogitBiasVocabulary.
absl::Status ValidateSamplerConfig(const SamplerConfig& config, int64_t vocab_size);

// kInvalidArgument naming logit_bias and the id when one is outside [0, vocab_size) (the
// coordinator's check against the target's vocabulary).
absl::Status CheckLogitBiasVocabulary(const SamplerConfig& config, int64_t vocab_size);

class Sampler {
 public:
  // Refuses what ValidateSamplerConfig refuses.
  static absl::StatusOr<Sampler> Create(const SamplerConfig& config, int64_t vocab_size);

  const SamplerConfig& config() const { return config_; }
  int64_t vocab_size() const { return vocab_size_; }
  bool greedy() const { return config_.temperature == 0.0f; }
  // Keys later draws by `seed` (a new request on the same conversation).
  void set_seed(uint64_t seed) { config_.seed = seed; }
  // Where a new request's output begins (SamplerConfig::output_start; >= 0).
  void set_output_start(int64_t position) { config_.output_start = position; }

  // Every call takes an optional `mask` of the allowed tokens (null: all allowed; the rules
  // above).

  // The token for `logits` [vocab] given the tokens before this position (`context`, for the
  // repetition penalty), drawn with CounterUniform(config().seed, position, purpose). -1 only
  // if the mask allows no token of the vocabulary.
  int32_t Sample(absl::Span<const float> logits, absl::Span<const int32_t> context,
                 int64_t position, RandomPurpose purpose = RandomPurpose::kSample,
                 const TokenMask* mask = nullptr);
  // The same with an explicit uniform number in [0, 1).
  int32_t SampleWithUniform(absl::Span<const float> logits, absl::Span<const int32_t> context,
                            double uniform, const TokenMask* mask = nullptr);

  // The filtered, normalised distribution, densely into `probabilities` [vocab] (zero for
  // every filtered token; all mass on the arg max when greedy).
  void Distribution(absl::Span<const float> logits, absl::Span<const int32_t> context,
                    absl::Span<float> probabilities, const TokenMask* mask = nullptr);
  // The same in sparse form; reuses `out`'s capacity.
  void Distribution(absl::Span<const float> logits, absl::Span<const int32_t> context,
                    SparseDistribution* out, const TokenMask* mask = nullptr);

  // The index drawn from non-negative `weights` (any scale) with `uniform` in [0, 1): the
  // first i whose running total exceeds uniform * total. Weights that are not > 0 (NaN
  // included) are never drawn; -1 if no weight is positive.
  static int64_t Draw(absl::Span<const float> weights, double uniform);

 private:
  Sampler(const SamplerConfig& config, int64_t vocab_size);

  // Runs the mask and the six steps, leaving the unnormalised weights in weights_ (0 for
  // filtered tokens, exactly 1 for the best); returns their total (>= 1), or 0 if the mask
  // allows no token (every weight 0).
  double Filter(absl::Span<const float> logits, absl::Span<const int32_t> context,
                const TokenMask* mask);
  // logits_ = the sanitised, penalised copy of `logits`.
  void ApplyPenalty(absl::Span<const float> logits, absl::Span<const int32_t> context);
  // logit_bias and the presence and frequency penalties on logits_ (the rules above).
  void ApplyAdditive(absl::Span<const int32_t> context);
  // logits_ = -inf for every token `mask` does not allow; returns the lowest allowed id of
  // the vocabulary, or -1 if none.
  int64_t ApplyMask(const TokenMask& mask);
  // weights_ = exp((logits_ - logits_[best]) / T), floored at kMinSamplerWeight.
  void Weigh(int64_t best);
  // Top-k: the k best candidates first in order_, the others' weights zeroed; returns k.
  int64_t TopK();
  // Orders candidate ids by penalised logit, ties by the lower id.
  auto RanksHigher() const {
    return [this](int32_t a, int32_t b) {
      return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
    };
  }
  // Top-p over the first `kept` candidates of order_ (the only ones with weight); returns
  // how many it keeps, ranked first.
  int64_t TopP(int64_t kept);
  // Min-p over the first `kept` candidates of order_: zeroes the weights below min_p.
  void MinP(int64_t kept);

  SamplerConfig config_;
  int64_t vocab_size_;
  std::vector<float> logits_;   // [vocab] penalised logits
  std::vector<float> weights_;  // [vocab] exp((logit - best) / T), 0 when filtered
  std::vector<int32_t> order_;  // [vocab] candidate ids; kept ones first
  std::vector<int32_t> counts_;  // [vocab] generated-token counts; all 0 between calls
  int64_t one_hot_ = -1;        // after Filter: the only candidate (greedy), else -1
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SAMPLER_H_
