// How far one model's logits are from another's, over [rows, vocab] matrices (one row per
// position, C order):
//  - CompareLogits: element-wise max |a − b| (and where), rms(a − b), and at how many rows the
//    argmax agrees (the check of an engine against a reference computed on the same weights);
//  - KlDivergence: KL(base ‖ test) per row, from log-softmax in double, its mean and 99th
//    percentile over the rows, and top-token agreement (how a quantized file's distribution
//    departs from its F16 base, like llama.cpp's perplexity tool's KL mode).
// NaN anywhere makes the affected figure NaN (never a silent pass). Argmax takes the lowest
// index among equal maxima. Thread-safe: plain functions.
#ifndef TANDEM_CLIENT_LOGITS_LOGITS_METRICS_H_
#define TANDEM_CLIENT_LOGITS_LOGITS_METRICS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tandem {

struct LogitsComparison {
  int64_t rows = 0;
  double max_abs = 0;  // max |a − b| over every element
  int64_t max_abs_row = 0, max_abs_col = 0;
  double rms = 0;            // sqrt(mean((a − b)²))
  int64_t argmax_agree = 0;  // rows whose argmax is the same in a and b
};

struct KlStats {
  int64_t rows = 0;
  double mean = 0;  // mean over rows of KL(base ‖ test), nats
  double p99 = 0;   // 99th percentile over rows (linear interpolation, as numpy's default)
  double max = 0;
  int64_t top_agree = 0;  // rows whose argmax is the same in base and test
};

// kInvalidArgument unless a and b both hold rows × cols values with rows, cols ≥ 1.
absl::StatusOr<LogitsComparison> CompareLogits(absl::Span<const double> a,
                                               absl::Span<const double> b, int64_t rows,
                                               int64_t cols);

// The same checks as CompareLogits.
absl::StatusOr<KlStats> KlDivergence(absl::Span<const double> base, absl::Span<const double> test,
                                     int64_t rows, int64_t cols);

// The index of the largest value of `row` (lowest index among equal ones; NaN never wins).
int64_t ArgMax(absl::Span<const double> row);

// KL(p ‖ q) of the softmax distributions of two logit rows of the same length, in nats.
double RowKl(absl::Span<const double> p_logits, absl::Span<const double> q_logits);

}  // namespace tandem

#endif  // TANDEM_CLIENT_LOGITS_LOGITS_METRICS_H_
