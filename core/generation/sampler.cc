#include "core/generation/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace tandem {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view requirement, double value) {
  return absl::InvalidArgumentError(
      absl::StrCat("sampler ", field, " must be ", requirement, ", got ", value));
}

constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr double kFloatMax = std::numeric_limits<float>::max();

// A model's logit as the sampler reads it: NaN is -inf (never kept), +inf the largest float.
float SanitisedLogit(float logit) {
  if (std::isnan(logit)) return -kInfinity;
  return logit == kInfinity ? static_cast<float>(kFloatMax) : logit;
}

// The repetition penalty of a sanitised logit, computed in double and clamped to the finite
// float range: 1e-38 and 1e38 saturate instead of overflowing. Where float would not
// overflow the result is the float operation's (a double quotient or product of two floats,
// rounded to float, is the correctly rounded float result).
float PenalisedLogit(float logit, float penalty) {
  if (logit == -kInfinity) return logit;
  const double value =
      logit > 0 ? static_cast<double>(logit) / penalty : static_cast<double>(logit) * penalty;
  return static_cast<float>(std::clamp(value, -kFloatMax, kFloatMax));
}

// The additive steps on a (sanitised, penalised) logit: `bias` and `count` generated
// occurrences (the rules in sampler.h), in double, clamped to the finite float range.
float AdditiveLogit(float logit, float bias, int32_t count, float presence, float frequency) {
  if (logit == -kInfinity || bias == -kMaxLogitBias) return -kInfinity;
  const double value = static_cast<double>(logit) + bias - (count > 0 ? presence : 0.0f) -
                       static_cast<double>(frequency) * count;
  return static_cast<float>(std::clamp(value, -kFloatMax, kFloatMax));
}

absl::Status ValidateLogitBias(absl::Span<const LogitBias> entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogitBias& e = entries[i];
    if (e.token < 0 || (i > 0 && e.token <= entries[i - 1].token)) {
      return absl::InvalidArgumentError(absl::StrCat("sampler logit_bias token ", e.token,
                                                     " is negative or out of increasing order"));
    }
    if (!(e.bias >= -kMaxLogitBias && e.bias <= kMaxLogitBias)) {
      return absl::InvalidArgumentError(absl::StrCat("sampler logit_bias of token ", e.token,
                                                     " must be in [-100, 100], got ", e.bias));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLogitBiasVocabulary(const SamplerConfig& config, int64_t vocab_size) {
  for (const LogitBias& e : config.logit_bias) {
    if (e.token < 0 || e.token >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampler logit_bias token ", e.token, " is outside the vocabulary of ",
                       vocab_size));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSamplerConfig(const SamplerConfig& c, int64_t vocab_size) {
  if (!std::isfinite(c.temperature) || c.temperature < 0) {
    return Invalid("temperature", "finite and >= 0", c.temperature);
  }
  if (c.top_k < 0) return Invalid("top_k", ">= 0", c.top_k);
  if (!(c.top_p > 0 && c.top_p <= 1)) return Invalid("top_p", "in (0, 1]", c.top_p);
  if (!(c.min_p >= 0 && c.min_p < 1)) return Invalid("min_p", "in [0, 1)", c.min_p);
  if (!std::isfinite(c.repetition_penalty) || c.repetition_penalty <= 0) {
    return Invalid("repetition_penalty", "finite and > 0", c.repetition_penalty);
  }
  if (c.penalty_window < 0) return Invalid("penalty_window", ">= 0", c.penalty_window);
  if (absl::Status status = ValidateLogitBias(c.logit_bias); !status.ok()) return status;
  if (!(std::fabs(c.presence_penalty) <= kMaxOpenAiPenalty)) {
    return Invalid("presence_penalty", "in [-2, 2]", c.presence_penalty);
  }
  if (!(std::fabs(c.frequency_penalty) <= kMaxOpenAiPenalty)) {
    return Invalid("frequency_penalty", "in [-2, 2]", c.frequency_penalty);
  }
  if (c.output_start < 0) {
    return Invalid("output_start", ">= 0", static_cast<double>(c.output_start));
  }
  if (vocab_size <= 0) return Invalid("vocab_size", "> 0", static_cast<double>(vocab_size));
  return absl::OkStatus();
}

absl::StatusOr<Sampler> Sampler::Create(const SamplerConfig& config, int64_t vocab_size) {
  if (absl::Status status = ValidateSamplerConfig(config, vocab_size); !status.ok()) return status;
  return Sampler(config, vocab_size);
}

Sampler::Sampler(const SamplerConfig& config, int64_t vocab_size)
    : config_(config),
      vocab_size_(vocab_size),
      logits_(vocab_size),
      weights_(vocab_size),
      order_(vocab_size),
      counts_(vocab_size) {}

int32_t Sampler::Sample(absl::Span<const float> logits, absl::Span<const int32_t> context,
                        int64_t position, RandomPurpose purpose, const TokenMask* mask) {
  return SampleWithUniform(logits, context, CounterUniform(config_.seed, position, purpose), mask);
}

int32_t Sampler::SampleWithUniform(absl::Span<const float> logits,
                                   absl::Span<const int32_t> context, double uniform,
                                   const TokenMask* mask) {
  Filter(logits, context, mask);
  // Filter leaves the best candidate with weight exactly 1, so Draw finds an index unless the
  // mask allowed no token (every weight 0): then -1.
  return static_cast<int32_t>(Draw(weights_, uniform));
}

void Sampler::Distribution(absl::Span<const float> logits, absl::Span<const int32_t> context,
                           absl::Span<float> probabilities, const TokenMask* mask) {
  // Programmer invariant: the caller sizes the buffer from vocab_size().
  TANDEM_CHECK(static_cast<int64_t>(probabilities.size()) == vocab_size_);
  const double total = Filter(logits, context, mask);
  if (one_hot_ >= 0 || total == 0) {  // the same values as the division below: 1 / 1, 0 / 1
    std::fill(probabilities.begin(), probabilities.end(), 0.0f);
    if (one_hot_ >= 0) probabilities[one_hot_] = 1.0f;
    return;
  }
  for (int64_t i = 0; i < vocab_size_; ++i) {
    probabilities[i] = static_cast<float>(weights_[i] / total);
  }
}

void Sampler::Distribution(absl::Span<const float> logits, absl::Span<const int32_t> context,
                           SparseDistribution* out, const TokenMask* mask) {
  const double total = Filter(logits, context, mask);  // 0: no weight is positive
  out->ids.clear();
  out->probabilities.clear();
  for (int64_t i = 0; i < vocab_size_; ++i) {
    if (weights_[i] > 0) {
      out->ids.push_back(static_cast<int32_t>(i));
      out->probabilities.push_back(static_cast<float>(weights_[i] / total));
    }
  }
}

int64_t Sampler::Draw(absl::Span<const float> weights, double uniform) {
  double total = 0;
  for (float w : weights) {
    if (w > 0) total += w;
  }
  if (!(total > 0)) return -1;
  const double threshold = uniform * total;
  // The same summation order as `total`, so the running total ends exactly at it.
  double running = 0;
  int64_t last = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] > 0)) continue;
    running += weights[i];
    last = static_cast<int64_t>(i);
    if (running > threshold) return last;
  }
  return last;  // uniform * total rounded up to total
}

void Sampler::ApplyPenalty(absl::Span<const float> logits, absl::Span<const int32_t> context) {
  if (config_.repetition_penalty == 1.0f || config_.penalty_window == 0) return;
  const size_t window = std::min(context.size(), static_cast<size_t>(config_.penalty_window));
  // Writing logits_[id] from the untouched logit is idempotent, so a token that occurs
  // several times in the window is penalised once (as Hugging Face does).
  const float penalty = config_.repetition_penalty;
  for (int32_t id : context.subspan(context.size() - window)) {
    if (id < 0 || id >= vocab_size_) continue;  // a foreign id has no logit here
    logits_[id] = PenalisedLogit(SanitisedLogit(logits[id]), penalty);
  }
}

void Sampler::ApplyAdditive(absl::Span<const int32_t> context) {
  const float presence = config_.presence_penalty, frequency = config_.frequency_penalty;
  const bool penalised = presence != 0.0f || frequency != 0.0f;
  if (!penalised && config_.logit_bias.empty()) return;
  const absl::Span<const int32_t> generated =
      penalised ? context.subspan(std::min<size_t>(context.size(), config_.output_start))
                : absl::Span<const int32_t>();
  for (int32_t id : generated) {
    if (id >= 0 && id < vocab_size_) ++counts_[id];
  }
  // Each id is written once, from its count, which is then reset: the biased ids first,
  // then the other generated ones (a count already reset is skipped). counts_ ends all 0.
  for (const LogitBias& e : config_.logit_bias) {
    if (e.token >= vocab_size_) continue;  // a foreign id has no logit here
    logits_[e.token] =
        AdditiveLogit(logits_[e.token], e.bias, counts_[e.token], presence, frequency);
    counts_[e.token] = 0;
  }
  for (int32_t id : generated) {
    if (id < 0 || id >= vocab_size_ || counts_[id] == 0) continue;
    logits_[id] = AdditiveLogit(logits_[id], 0.0f, counts_[id], presence, frequency);
    counts_[id] = 0;
  }
}

int64_t Sampler::ApplyMask(const TokenMask& mask) {
  int64_t lowest = -1;
  for (int64_t i = 0; i < vocab_size_; ++i) {
    if (!mask.Allowed(static_cast<int32_t>(i))) {
      logits_[i] = -kInfinity;
    } else if (lowest < 0) {
      lowest = i;
    }
  }
  return lowest;
}

double Sampler::Filter(absl::Span<const float> logits, absl::Span<const int32_t> context,
                       const TokenMask* mask) {
  // Programmer invariant: the logits come from the model whose vocabulary Create was given.
  TANDEM_CHECK(static_cast<int64_t>(logits.size()) == vocab_size_);
  for (int64_t i = 0; i < vocab_size_; ++i) logits_[i] = SanitisedLogit(logits[i]);
  ApplyPenalty(logits, context);
  ApplyAdditive(context);
  // After the penalty and the additive steps, which map -inf to -inf: the same as masking
  // first.
  int64_t best = mask != nullptr ? ApplyMask(*mask) : 0;
  if (best < 0) {  // the mask allows nothing: no candidate
    std::fill(weights_.begin(), weights_.end(), 0.0f);
    one_hot_ = -1;
    return 0;
  }
  // Starting from an allowed id, a refused one (-inf) never wins the strict comparison.
  for (int64_t i = best + 1; i < vocab_size_; ++i) {
    if (logits_[i] > logits_[best]) best = i;  // strict: ties keep the lower id
  }
  // Greedy, or nothing finite to weigh (best is then the lowest allowed id): all mass on it.
  if (greedy() || logits_[best] == -kInfinity) {
    std::fill(weights_.begin(), weights_.end(), 0.0f);
    weights_[best] = 1.0f;
    one_hot_ = best;
    return 1.0;
  }
  one_hot_ = -1;
  Weigh(best);
  std::iota(order_.begin(), order_.end(), 0);
  int64_t kept = TopK();
  if (config_.top_p < 1.0f) {
    const int64_t before = kept;
    kept = TopP(kept);
    for (int64_t j = kept; j < before; ++j) weights_[order_[j]] = 0.0f;
  }
  if (config_.min_p > 0.0f) MinP(kept);
  double total = 0;
  for (int64_t j = 0; j < kept; ++j) total += weights_[order_[j]];
  return total;
}

void Sampler::Weigh(int64_t best) {
  // In double, (logit - best) / T is finite for any finite float logits and T > 0 (at most
  // 2 * FLT_MAX / FLT_TRUE_MIN), <= 0, and exactly 0 for the best.
  const double best_logit = logits_[best];
  const double temperature = config_.temperature;
  for (int64_t i = 0; i < vocab_size_; ++i) {
    const float w = static_cast<float>(std::exp((logits_[i] - best_logit) / temperature));
    weights_[i] = w >= kMinSamplerWeight ? w : 0.0f;
  }
}

int64_t Sampler::TopK() {
  if (config_.top_k <= 0 || config_.top_k >= vocab_size_) return vocab_size_;
  std::nth_element(order_.begin(), order_.begin() + config_.top_k, order_.end(), RanksHigher());
  for (int64_t j = config_.top_k; j < vocab_size_; ++j) weights_[order_[j]] = 0.0f;
  return config_.top_k;
}

int64_t Sampler::TopP(int64_t kept) {
  // Only the first `kept` of order_ have weight, so summing every id in increasing order is
  // the mass of the candidates in a fixed order (the rule the header states).
  double mass = 0;
  for (int64_t i = 0; i < vocab_size_; ++i) mass += weights_[i];
  const double needed = static_cast<double>(config_.top_p) * mass;
  // Rank only as many candidates as the mass needs: sort the best m, widen if short.
  for (int64_t m = std::min<int64_t>(kept, 64);; m = std::min(kept, 4 * m)) {
    std::partial_sort(order_.begin(), order_.begin() + m, order_.begin() + kept, RanksHigher());
    double running = 0;
    for (int64_t j = 0; j < m; ++j) {
      running += weights_[order_[j]];
      if (running >= needed) return j + 1;  // the smallest prefix reaching top_p
    }
    if (m == kept) return kept;  // rounding kept the total just below `needed`
  }
}

void Sampler::MinP(int64_t kept) {
  // Relative to the best, whose weight is exactly 1: a plain comparison. Weights are zeroed
  // in place, not compacted, so order_ keeps every candidate exactly once.
  const float min_p = config_.min_p;
  for (int64_t j = 0; j < kept; ++j) {
    if (weights_[order_[j]] < min_p) weights_[order_[j]] = 0.0f;
  }
}

}  // namespace tandem
