// tandem-step-bench MODEL [--sessions 1,8,16,32] [--context 64] [--steps 20] [--reps 5]
//                         [--threads 2] [--kv f16|f32|i8]
//                         [--activations int16|int8]
// The cost of one batched decode step in-process (issue 31): `sessions` one-row segments,
// each session with its own cache of `context` positions, run as one Decoder::ForwardBatch
// (what a worker's scheduler runs when that many streams decode at once). Every step runs at
// the same positions (the caches are truncated back), so a step's work does not grow. Rounds
// go over the session counts in turn (interleaved: a neighbour's load falls on all of them)
// and each figure is the median over --reps rounds of --steps steps. Prints one line per
// count: ms a step, tokens a second, and both against one session. Meant to be run under
// `perf record` too, for the step's breakdown (docs/performance.md, "Batched decode steps").
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "core/base/status_macros.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "core/kernels/matmul.h"
#include "core/kernels/thread_pool.h"

ABSL_FLAG(std::string, sessions, "1,8,16,32", "session counts, one decode row each");
ABSL_FLAG(int, context, 64, "positions cached in each session before the step");
ABSL_FLAG(int, steps, 20, "steps timed per round and count");
ABSL_FLAG(int, reps, 5, "rounds; each figure is the median");
ABSL_FLAG(int, threads, 2, "threads for the forward pass");
ABSL_FLAG(std::string, kv, "f16", "KV cache type: f32, f16 or i8");
ABSL_FLAG(std::string, activations, "int16", "the matmuls' activation precision: int16 or int8");

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

struct StepBenchOptions {
  std::string model_path;
  std::vector<int64_t> sessions;
  int64_t context = 64;
  int steps = 20;
  int reps = 5;
  int threads = 2;
  KvType kv = KvType::kF16;
  ActivationPrecision activations = ActivationPrecision::kInt16;
};

std::vector<int32_t> SyntheticTokens(int64_t n, int64_t vocab, int64_t salt) {
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i)
    ids[i] = static_cast<int32_t>((i * 7919 + salt * 104729 + 17) % vocab);
  return ids;
}

// User and system CPU seconds of this process so far (every thread).
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

absl::Status RunStepBench(const StepBenchOptions& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(o.model_path, {o.activations}));
  const int64_t vocab = model->config().vocab_size;
  ThreadPool pool(o.threads);
  Decoder decoder(*model, pool);
  const int64_t most = *std::max_element(o.sessions.begin(), o.sessions.end());
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < most; ++i) {
    ASSIGN_OR_RETURN(caches.emplace_back(), decoder.NewCache(o.context + 1, o.kv));
    prompts.push_back(SyntheticTokens(o.context + 1, vocab, i));
    RETURN_IF_ERROR(decoder
                        .Forward(*caches.back(),
                                 absl::MakeConstSpan(prompts.back()).first(o.context), 0,
                                 LogitsMode::kNone)
                        .status());
  }
  // Seconds of one step of n sessions: each runs its token at position `context`.
  double cpu_step = 0;  // CPU seconds (all threads) of the last timed step
  auto step = [&](int64_t n) -> absl::StatusOr<double> {
    std::vector<ForwardSegment> segments;
    for (int64_t i = 0; i < n; ++i) {
      segments.push_back({caches[i].get(), absl::MakeConstSpan(prompts[i]).subspan(o.context, 1),
                          o.context, LogitsMode::kLast});
    }
    RETURN_IF_ERROR(decoder.ForwardBatch(segments).status());  // warm: scratch grown
    const double cpu_start = CpuSeconds();
    const auto start = Clock::now();
    for (int s = 0; s < o.steps; ++s) RETURN_IF_ERROR(decoder.ForwardBatch(segments).status());
    cpu_step = (CpuSeconds() - cpu_start) / o.steps;
    return std::chrono::duration<double>(Clock::now() - start).count() / o.steps;
  };
  // For `perf record -k CLOCK_MONOTONIC` + `perf report --time FROM,`: the steps alone.
  std::fprintf(stderr, "steps from monotonic %.6f\n",
               std::chrono::duration<double>(Clock::now().time_since_epoch()).count());
  std::vector<std::vector<double>> seconds(o.sessions.size()), cpu(o.sessions.size());
  for (int r = 0; r < o.reps; ++r) {
    for (size_t k = 0; k < o.sessions.size(); ++k) {
      ASSIGN_OR_RETURN(double s, step(o.sessions[k]));
      seconds[k].push_back(s);
      cpu[k].push_back(cpu_step);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Against the first count (1 by default): a step's cost and the tokens a second it gives.
  const double first = median(seconds[0]);
  const double first_rate = static_cast<double>(o.sessions[0]) / first;
  std::printf("sessions  ms/step   tok/s  step/first  tok/s/first  cpu_ms/step\n");
  for (size_t k = 0; k < o.sessions.size(); ++k) {
    const double s = median(seconds[k]);
    const double rate = static_cast<double>(o.sessions[k]) / s;
    std::printf("%8lld %8.2f %7.1f %11.2f %12.2f %12.2f\n", static_cast<long long>(o.sessions[k]),
                s * 1e3, rate, s / first, rate / first_rate, median(cpu[k]) * 1e3);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-step-bench", "0.1.0",
       "Measures one batched decode step of 1, 8, 16, 32 sessions in-process.\n"
       "usage: tandem-step-bench MODEL [--sessions 1,8,16,32] [--context 64] [--steps 20]\n"
       "       [--reps 5] [--threads 2] [--kv f16|f32|i8] [--activations int16|int8]",
       "tools/bench/step_bench.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-step-bench: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->size() != 1) {
    std::fprintf(stderr, "tandem-step-bench: expected one MODEL argument (see --help)\n");
    return 2;
  }
  tandem::StepBenchOptions options;
  options.model_path = (*args)[0];
  options.context = absl::GetFlag(FLAGS_context);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.reps = absl::GetFlag(FLAGS_reps);
  options.threads = absl::GetFlag(FLAGS_threads);
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_sessions), ',')) {
    int64_t n;
    if (!absl::SimpleAtoi(part, &n) || n < 1 || n > tandem::Decoder::kMaxChunk) {
      std::fprintf(stderr, "tandem-step-bench: --sessions: '%s' is not a count in [1, %lld]\n",
                   std::string(part).c_str(), static_cast<long long>(tandem::Decoder::kMaxChunk));
      return 2;
    }
    options.sessions.push_back(n);
  }
  if (options.context < 1 || options.steps < 1 || options.reps < 1 || options.threads < 1 ||
      options.threads > tandem::kMaxPoolThreads) {
    std::fprintf(stderr, "tandem-step-bench: --context, --steps, --reps, --threads must be >= 1\n");
    return 2;
  }
  absl::StatusOr<tandem::KvType> kv = tandem::ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) {
    std::fprintf(stderr, "tandem-step-bench: --kv: %s\n",
                 std::string(kv.status().message()).c_str());
    return 2;
  }
  options.kv = *kv;
  absl::StatusOr<tandem::ActivationPrecision> activations =
      tandem::ParseActivationPrecision(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) {
    std::fprintf(stderr, "tandem-step-bench: --activations: %s\n",
                 std::string(activations.status().message()).c_str());
    return 2;
  }
  options.activations = *activations;
  const absl::Status status = tandem::RunStepBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "tandem-step-bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
