// tandem-bench's measurements, as a library: prefill and decode speed, the cost of a forward
// pass over b tokens relative to one decode step, memory bandwidth and peak memory.
#ifndef TANDEM_TOOLS_BENCH_BENCH_H_
#define TANDEM_TOOLS_BENCH_BENCH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/decoder/kv_cache.h"
#include "core/kernels/matmul.h"

namespace tandem {

struct BenchOptions {
  std::string model_path;
  int threads = 2;
  KvType kv = KvType::kF16;
  ActivationPrecision activations = ActivationPrecision::kInt16;  // --activations
  int64_t prompt_tokens = 128;  // -p
  int64_t decode_tokens = 64;   // -n
  std::vector<int64_t> batches = {1, 2, 5, 9};
  std::vector<int64_t> sessions = {};  // --sessions: decode steps of that many sessions at once
  int reps = 3;
};

// One `key value` pair per figure, in a stable order.
using BenchReport = std::vector<std::pair<std::string, std::string>>;

absl::StatusOr<BenchReport> RunBench(const BenchOptions& options);

// Read bandwidth of this machine in GB/s with `threads` threads (best of a few passes over a
// buffer much larger than the caches).
double MeasureReadBandwidth(int threads);

}  // namespace tandem

#endif  // TANDEM_TOOLS_BENCH_BENCH_H_
