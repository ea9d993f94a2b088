#include "core/generation/prediction_length_policy.h"

#include <algorithm>

namespace tandem {
namespace {

// E(k) = 1 + a + ... + a^k: the tokens a round of k guesses yields.
double ExpectedTokens(double a, int32_t k) {
  double total = 1, run = 1;
  for (int32_t i = 0; i < k; ++i) {
    run *= a;
    total += run;
  }
  return total;
}

}  // namespace

PredictionLengthPolicy::PredictionLengthPolicy(const PredictionLengthOptions& options)
    : options_(options),
      k_(options.fixed_tokens > 0
             ? options.fixed_tokens
             : std::clamp(options.initial_tokens, 1, std::max(1, options.max_tokens))),
      kept_(options.prior_acceptance),
      cut_(1 - options.prior_acceptance) {}

double PredictionLengthPolicy::acceptance() const {
  const double total = kept_ + cut_;
  return total > 0 ? kept_ / total : options_.prior_acceptance;
}

double PredictionLengthPolicy::RoundSeconds(int32_t k) const {
  if (weight_ <= 0) return 0;
  const double mean_k = sum_k_ / weight_;
  const double mean_s = sum_s_ / weight_;
  const double variance = sum_kk_ / weight_ - mean_k * mean_k;
  const bool fitted = rounds_ >= options_.evidence_rounds && variance > 1;
  double row = fitted ? (sum_ks_ / weight_ - mean_k * mean_s) / variance : -1;
  const double prior_row = options_.row_cost * mean_s / (1 + options_.row_cost * mean_k);
  if (row < 0) row = prior_row;  // too little spread to fit, or noise against it
  // A few slow rounds (the OS preempting the call) can tilt the line until a round without
  // guesses looks free: the rows may take at most 80 % of a mean round.
  if (mean_k > 0) row = std::min(row, 0.8 * mean_s / mean_k);
  const double base = mean_s - row * mean_k;
  return base + row * k;
}

void PredictionLengthPolicy::Observe(const RoundReport& round) {
  sat_out_ = 0;
  if (round.predicted <= 0) return;
  ++rounds_;
  const double a = options_.acceptance_decay;
  kept_ = a * kept_ + round.predicted_accepted;
  cut_ = a * cut_ + (round.predicted_accepted < round.predicted ? 1 : 0);
  const double t = options_.timing_decay;
  const double k = round.predicted + round.forced;
  double s = round.round_seconds > 0 ? round.round_seconds : round.verify_seconds;
  // A round more than twice its expected time counts as twice it (as the draft's cost model
  // does): one preempted round must not swamp the estimates.
  if (const double expected = RoundSeconds(static_cast<int32_t>(k)); expected > 0) {
    s = std::min(s, 2 * expected);
  }
  weight_ = t * weight_ + 1;
  sum_k_ = t * sum_k_ + k;
  sum_s_ = t * sum_s_ + s;
  sum_kk_ = t * sum_kk_ + k * k;
  sum_ks_ = t * sum_ks_ + k * s;
  Choose();
}

void PredictionLengthPolicy::SatOut() {
  if (++sat_out_ < options_.probe_after_rounds) return;
  sat_out_ = 0;
  k_ = std::max(1, std::min(options_.probe_tokens, options_.max_tokens));
}

void PredictionLengthPolicy::Choose() {
  if (options_.fixed_tokens > 0) {
    k_ = options_.fixed_tokens;
    return;
  }
  const double a = std::min(acceptance(), 0.999);
  const double alone = 1 / RoundSeconds(0);
  int32_t best = 0;
  double best_rate = 0;
  for (int32_t k = 1; k <= options_.max_tokens; ++k) {
    const double rate = ExpectedTokens(a, k) / RoundSeconds(k);
    if (rate > best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  const bool enough = rounds_ >= options_.evidence_rounds;
  k_ = !enough || best_rate > alone * (1 + options_.margin) ? best : 0;
}

}  // namespace tandem
