#include "client/logits/logits_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

absl::Status CheckShapes(absl::Span<const double> a, absl::Span<const double> b, int64_t rows,
                         int64_t cols) {
  if (rows < 1 || cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat("logits shape [", rows, ", ", cols, "]"));
  }
  const auto expected = static_cast<size_t>(rows * cols);
  if (a.size() != expected || b.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("logits of ", a.size(), " and ", b.size(),
                                                   " values for shape [", rows, ", ", cols, "]"));
  }
  return absl::OkStatus();
}

// log(Σ exp(x)) computed around the maximum so that nothing overflows.
double LogSumExp(absl::Span<const double> x) {
  double max = -std::numeric_limits<double>::infinity();
  for (double v : x) {
    if (std::isnan(v)) return kNaN;
    max = std::max(max, v);
  }
  if (std::isinf(max)) return max;
  double sum = 0;
  for (double v : x) sum += std::exp(v - max);
  return max + std::log(sum);
}

// Linear interpolation between the closest ranks (numpy.percentile's default).
double Percentile(std::vector<double> values, double fraction) {
  for (double v : values) {
    if (std::isnan(v)) return kNaN;  // (and NaN would break the sort's ordering)
  }
  std::sort(values.begin(), values.end());
  const double position = fraction * static_cast<double>(values.size() - 1);
  const auto low = static_cast<size_t>(std::floor(position));
  const size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (position - static_cast<double>(low));
}

}  // namespace

int64_t ArgMax(absl::Span<const double> row) {
  int64_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best] || std::isnan(row[best])) best = static_cast<int64_t>(i);
  }
  return best;
}

double RowKl(absl::Span<const double> p_logits, absl::Span<const double> q_logits) {
  const double p_norm = LogSumExp(p_logits);
  const double q_norm = LogSumExp(q_logits);
  double kl = 0;
  for (size_t i = 0; i < p_logits.size(); ++i) {
    const double log_p = p_logits[i] - p_norm;
    const double p = std::exp(log_p);
    if (p == 0 && !std::isnan(log_p)) continue;  // 0 · log 0 = 0
    kl += p * (log_p - (q_logits[i] - q_norm));
  }
  return kl;
}

absl::StatusOr<LogitsComparison> CompareLogits(absl::Span<const double> a,
                                               absl::Span<const double> b, int64_t rows,
                                               int64_t cols) {
  RETURN_IF_ERROR(CheckShapes(a, b, rows, cols));
  LogitsComparison c;
  c.rows = rows;
  double sum_squares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(a[i] - b[i]);
    sum_squares += diff * diff;
    if (diff > c.max_abs || (std::isnan(diff) && !std::isnan(c.max_abs))) {
      c.max_abs = diff;
      c.max_abs_row = static_cast<int64_t>(i) / cols;
      c.max_abs_col = static_cast<int64_t>(i) % cols;
    }
  }
  c.rms = std::sqrt(sum_squares / static_cast<double>(a.size()));
  for (int64_t r = 0; r < rows; ++r) {
    if (ArgMax(a.subspan(r * cols, cols)) == ArgMax(b.subspan(r * cols, cols))) ++c.argmax_agree;
  }
  return c;
}

absl::StatusOr<KlStats> KlDivergence(absl::Span<const double> base, absl::Span<const double> test,
                                     int64_t rows, int64_t cols) {
  RETURN_IF_ERROR(CheckShapes(base, test, rows, cols));
  KlStats s;
  s.rows = rows;
  std::vector<double> per_row(rows);
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const absl::Span<const double> p = base.subspan(r * cols, cols);
    const absl::Span<const double> q = test.subspan(r * cols, cols);
    per_row[r] = RowKl(p, q);
    sum += per_row[r];
    if (ArgMax(p) == ArgMax(q)) ++s.top_agree;
  }
  s.mean = sum / static_cast<double>(rows);
  s.p99 = Percentile(per_row, 0.99);
  s.max = Percentile(per_row, 1.0);
  return s;
}

}  // namespace tandem
