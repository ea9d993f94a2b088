// tandem-kernel-bench --type q5_0 --rows 2560 --cols 960 [--x-rows 1,5] [--copies 1]
//                     [--threads 1] [--reps 200] [--activations int16|int8]
// Times MatMul of one weight type on this CPU's path, for x batches of each size: prints the
// median time per matrix, the weights' bytes per second, and the nanoseconds per 16-row ×
// 32-column panel block per thread (the unit of the panel kernels). --copies 1 keeps the
// matrix in cache (L2 if it fits: the kernel's compute); more copies, read in turn, stream it
// from memory (--copies 100 of a 360M-shape matrix: what a forward pass sees). The weights are
// random bytes (timing only: their values do not change the kernels' work).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "core/kernels/matmul.h"
#include "core/kernels/packed_matrix.h"
#include "core/kernels/thread_pool.h"
#include "core/model/tensor_type.h"

ABSL_FLAG(std::string, type, "q5_0", "weight type (ggml's name: q5_0, q4_k, q6_k, q8_0, ...)");
ABSL_FLAG(int64_t, rows, 2560, "weight rows (output features)");
ABSL_FLAG(int64_t, cols, 960, "weight columns (a multiple of the type's block)");
ABSL_FLAG(std::string, x_rows, "1,5", "x batch sizes, each timed");
ABSL_FLAG(int, copies, 1, "copies of the matrix read in turn (1: cached; 100: streamed)");
ABSL_FLAG(int, threads, 1, "threads");
ABSL_FLAG(int, reps, 200, "repetitions; the figure is the median");
ABSL_FLAG(std::string, activations, "int16", "activation precision of the integer kernels");

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<TensorType> TypeNamed(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id) {
    const std::optional<TensorTypeTraits> traits = TensorTypeFromId(id);
    if (traits && traits->supported &&
        absl::AsciiStrToLower(traits->name) == absl::AsciiStrToLower(name)) {
      return traits->type;
    }
  }
  return absl::InvalidArgumentError("--type: unknown or unsupported type '" + name + "'");
}

int Run(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "tandem-kernel-bench: takes no arguments (see --help)\n");
    return 2;
  }
  absl::StatusOr<TensorType> type = TypeNamed(absl::GetFlag(FLAGS_type));
  const int64_t rows = absl::GetFlag(FLAGS_rows), cols = absl::GetFlag(FLAGS_cols);
  const int copies = absl::GetFlag(FLAGS_copies), reps = absl::GetFlag(FLAGS_reps);
  const int threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<int64_t> row_bytes =
      type.ok() ? RowBytes(*type, cols) : absl::StatusOr<int64_t>(type.status());
  if (!row_bytes.ok() || rows < 1 || copies < 1 || reps < 1 || threads < 1 ||
      threads > kMaxPoolThreads) {
    std::fprintf(stderr, "tandem-kernel-bench: %s\n",
                 row_bytes.ok() ? "--rows, --copies, --reps and --threads must be >= 1"
                                : std::string(row_bytes.status().message()).c_str());
    return 2;
  }
  std::vector<int64_t> sizes;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_x_rows), ',')) {
    int64_t n;
    if (!absl::SimpleAtoi(part, &n) || n < 1 || n > 512) {
      std::fprintf(stderr, "tandem-kernel-bench: --x-rows: '%s' is not in [1, 512]\n",
                   std::string(part).c_str());
      return 2;
    }
    sizes.push_back(n);
  }
  std::mt19937 rng(1);
  std::vector<uint8_t> data(*row_bytes * rows);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  absl::StatusOr<ActivationPrecision> activations =
      ParseActivationPrecision(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) {
    std::fprintf(stderr, "tandem-kernel-bench: --activations: %s\n",
                 std::string(activations.status().message()).c_str());
    return 2;
  }
  WeightMatrix w{*type, rows, cols, data.data(), *row_bytes, nullptr};
  w.activations = *activations;
  w.int8_panels = UsesInt8Panels(w);
  const bool packs = PacksOnThisCpu(*type);
  const int64_t bytes = packs ? PackedBytes(w) : *row_bytes * rows;
  absl::StatusOr<PackedArena> arena = PackedArena::Create(bytes * copies);
  if (!arena.ok()) {
    std::fprintf(stderr, "tandem-kernel-bench: %s\n", arena.status().ToString().c_str());
    return 1;
  }
  for (int c = 0; c < copies; ++c) {
    uint8_t* copy = arena->data() + c * bytes;
    if (packs) {
      PackMatrix(w, copy);
    } else {
      std::copy(data.begin(), data.end(), copy);
    }
  }
  ThreadPool pool(threads);
  MatMulScratch scratch;
  for (int64_t n : sizes) {
    std::vector<float> x(n * cols), y(n * rows);
    for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<double> seconds;
    for (int r = 0; r < reps; ++r) {
      const auto start = Clock::now();
      for (int c = 0; c < copies; ++c) {
        WeightMatrix m = w;
        (packs ? m.packed : m.data) = arena->data() + c * bytes;
        MatMul(m, x.data(), n, y.data(), pool, &scratch);
      }
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() / copies);
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    const double panel_blocks = static_cast<double>(rows) / 16 * cols / 32;
    std::printf("%s %s %lldx%lld x_rows %lld copies %d threads %d: %.1f us, %.2f GB/s, %.2f ns a "
                "panel block a thread\n",
                std::string(TensorTypeName(*type)).c_str(),
                std::string(ActivationPrecisionName(*activations)).c_str(),
                static_cast<long long>(rows),
                static_cast<long long>(cols), static_cast<long long>(n), copies, threads,
                median * 1e6, bytes / median / 1e9, median * 1e9 / panel_blocks * threads);
  }
  return 0;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-kernel-bench", "0.1.0",
       "Times one weight type's matmul kernel for x batches of given sizes.\n"
       "usage: tandem-kernel-bench --type q5_0 --rows 2560 --cols 960 [--x-rows 1,5]\n"
       "       [--copies 1] [--threads 1] [--reps 200] [--activations int16|int8]",
       "tools/bench/kernel_bench.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-kernel-bench: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  return tandem::Run(*args);
}
