// Test-only: Pearson's chi-square goodness-of-fit test for the statistical tests of lossless
// speculative sampling.
#ifndef TANDEM_CORE_GENERATION_CHI_SQUARE_H_
#define TANDEM_CORE_GENERATION_CHI_SQUARE_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tandem::testing {

// An outcome: the tokens generated, in order.
using Outcome = std::vector<int32_t>;

struct ChiSquareResult {
  double statistic = 0;
  int degrees_of_freedom = 0;
  double p_value = 1;
  // Significance 0.001.
  bool rejected() const { return p_value < 0.001; }
  std::string ToString() const {
    return absl::StrCat("chi2 ", statistic, " with ", degrees_of_freedom, " dof, p-value ",
                        p_value);
  }
};

// Q(a, x) = Γ(a, x) / Γ(a), the regularised upper incomplete gamma function: by its power
// series below x = a + 1 and by its continued fraction (modified Lentz) above, where each
// converges fast.
inline double RegularizedUpperGamma(double a, double x) {
  if (x <= 0) return 1.0;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && term > sum * 1e-16; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int n = 1; n < 1000; ++n) {
    const double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    d = std::abs(d) < kTiny ? kTiny : d;
    c = b + an / c;
    c = std::abs(c) < kTiny ? kTiny : c;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-16) break;
  }
  return std::exp(log_prefix) * h;
}

// P(X > statistic) for X ~ chi-square with `dof` degrees of freedom.
inline double ChiSquarePValue(double statistic, int dof) {
  return RegularizedUpperGamma(dof / 2.0, statistic / 2.0);
}

// Tests `observed` counts (n draws in all) against `expected` probabilities at significance
// 0.001. Cells expecting fewer than 5 draws, and outcomes missing from `expected`, are pooled
// into one cell whose probability is what `expected` leaves over. An observed outcome of
// probability exactly zero makes the statistic infinite.
inline ChiSquareResult ChiSquareTest(const std::map<Outcome, int64_t>& observed,
                                     const std::map<Outcome, double>& expected, int64_t n) {
  ChiSquareResult result;
  double pooled_probability = 1.0;
  int64_t pooled_count = 0;
  int cells = 0;
  for (const auto& [outcome, probability] : expected) {
    const auto it = observed.find(outcome);
    const int64_t count = it == observed.end() ? 0 : it->second;
    if (probability == 0 && count > 0) {
      result.statistic = std::numeric_limits<double>::infinity();
    }
    if (probability * n < 5) continue;
    pooled_probability -= probability;
    const double e = probability * n;
    result.statistic += (count - e) * (count - e) / e;
    ++cells;
  }
  for (const auto& [outcome, count] : observed) {
    const auto it = expected.find(outcome);
    if (it == expected.end() || it->second * n < 5) pooled_count += count;
  }
  const double pooled_expected = std::max(0.0, pooled_probability) * n;
  if (pooled_expected >= 1e-9) {
    result.statistic +=
        (pooled_count - pooled_expected) * (pooled_count - pooled_expected) / pooled_expected;
    ++cells;
  } else if (pooled_count > 0) {
    result.statistic = std::numeric_limits<double>::infinity();
  }
  result.degrees_of_freedom = cells - 1;
  result.p_value = result.degrees_of_freedom > 0
                       ? ChiSquarePValue(result.statistic, result.degrees_of_freedom)
                       : (result.statistic > 0 ? 0.0 : 1.0);
  return result;
}

}  // namespace tandem::testing

#endif  // TANDEM_CORE_GENERATION_CHI_SQUARE_H_
