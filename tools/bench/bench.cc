#include "tools/bench/bench.h"

#include <immintrin.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "core/kernels/matmul.h"
#include "core/kernels/packed_matrix.h"
#include "core/kernels/thread_pool.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Deterministic in-vocabulary tokens; the benchmark needs no tokenizer.
std::vector<int32_t> SyntheticTokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 17) % vocab);
  return ids;
}

// The median over `reps` pairs of seconds(n) / seconds(1), each pair timed back to back so
// that both see the same machine load.
absl::StatusOr<double> PairedRatio(int reps,
                                   absl::FunctionRef<absl::StatusOr<double>(int64_t)> seconds,
                                   int64_t n) {
  std::vector<double> ratios;
  for (int r = 0; r < reps; ++r) {
    ASSIGN_OR_RETURN(double one, seconds(1));
    ASSIGN_OR_RETURN(double many, seconds(n));
    ratios.push_back(many / one);
  }
  return Median(ratios);
}

int64_t MatrixBytes(const WeightMatrix& m) { return m.rows * m.row_bytes; }

// Bytes of weights a decode step reads: every layer matrix and the output projection.
int64_t WeightBytesPerToken(const Model& model) {
  int64_t bytes = MatrixBytes(model.output());
  for (int64_t i = 0; i < model.config().n_layers; ++i) {
    const LayerWeights& l = model.layer(i);
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      bytes += MatrixBytes(*m);
    }
  }
  return bytes;
}

std::string Fixed(double v, int digits) { return absl::StrFormat("%.*f", digits, v); }

}  // namespace

namespace {

// OR-reduces [begin, end) of `data` with four independent 256-bit accumulators, so the loads
// and not the arithmetic bound the loop.
__attribute__((target("avx2"))) uint64_t SweepAvx2(const uint64_t* data, int64_t begin,
                                                   int64_t end) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    // Two cache lines per iteration; prefetch as far ahead as the kernels do.
    _mm_prefetch(reinterpret_cast<const char*>(data + i + 256), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(data + i + 264), _MM_HINT_T0);
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_or_si256(
          acc[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 4 * k)));
    }
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(
      reinterpret_cast<__m256i*>(lanes),
      _mm256_or_si256(_mm256_or_si256(acc[0], acc[1]), _mm256_or_si256(acc[2], acc[3])));
  uint64_t result = lanes[0] | lanes[1] | lanes[2] | lanes[3];
  for (; i < end; ++i) result |= data[i];
  return result;
}

uint64_t SweepScalar(const uint64_t* data, int64_t begin, int64_t end) {
  uint64_t acc[4] = {};
  int64_t i = begin;
  for (; i + 4 <= end; i += 4) {
    for (int k = 0; k < 4; ++k) acc[k] |= data[i + k];
  }
  for (; i < end; ++i) acc[0] |= data[i];
  return acc[0] | acc[1] | acc[2] | acc[3];
}

}  // namespace

double MeasureReadBandwidth(int threads) {
  const int64_t n = int64_t{1} << 26;  // 512 MiB of 8-byte words
  // In huge pages like the packed weights: through 4 KiB pages a VM's nested page walks, not
  // the memory, bound the sweep.
  absl::StatusOr<PackedArena> arena = PackedArena::Create(n * sizeof(uint64_t));
  if (!arena.ok()) return 0;
  uint64_t* buffer = reinterpret_cast<uint64_t*>(arena->data());
  for (int64_t i = 0; i < n; ++i) buffer[i] = static_cast<uint64_t>(i);
  const bool avx2 = __builtin_cpu_supports("avx2");
  ThreadPool pool(threads);
  std::atomic<uint64_t> sink{0};
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = Clock::now();
    pool.ParallelFor(
        n,
        [&](int64_t begin, int64_t end) {
          sink |= avx2 ? SweepAvx2(buffer, begin, end) : SweepScalar(buffer, begin, end);
        },
        1 << 16);
    const double seconds = Seconds(start);
    best = std::max(best, n * sizeof(uint64_t) / seconds / 1e9);
  }
  return best;  // (the atomic sink keeps the sweeps from being optimised away)
}

absl::StatusOr<BenchReport> RunBench(const BenchOptions& o) {
  if (o.prompt_tokens < 1 || o.decode_tokens < 1 || o.reps < 1 || o.threads < 1) {
    return absl::InvalidArgumentError("-p, -n, --reps and --threads must be >= 1");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(o.model_path, {o.activations}));
  const ModelConfig& c = model->config();
  ThreadPool pool(o.threads);
  Decoder decoder(*model, pool);
  int64_t max_batch = 1;
  for (int64_t b : o.batches) max_batch = std::max(max_batch, b);
  const int64_t context = o.prompt_tokens + std::max(o.decode_tokens, max_batch) + 1;
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, decoder.NewCache(context, o.kv));
  const std::vector<int32_t> prompt = SyntheticTokens(o.prompt_tokens, c.vocab_size);
  const std::vector<int32_t> extra =
      SyntheticTokens(std::max(o.decode_tokens, max_batch) + 1, c.vocab_size);

  // Warm-up: fault the weights in and grow the scratch buffers.
  RETURN_IF_ERROR(decoder.Forward(*cache, prompt, 0, LogitsMode::kLast).status());
  RETURN_IF_ERROR(decoder
                      .Forward(*cache, absl::MakeConstSpan(extra).subspan(0, max_batch),
                               o.prompt_tokens, LogitsMode::kAll)
                      .status());

  std::vector<double> prefill, decode;
  for (int r = 0; r < o.reps; ++r) {
    auto start = Clock::now();
    RETURN_IF_ERROR(decoder.Forward(*cache, prompt, 0, LogitsMode::kLast).status());
    prefill.push_back(o.prompt_tokens / Seconds(start));
    start = Clock::now();
    for (int64_t i = 0; i < o.decode_tokens; ++i) {
      RETURN_IF_ERROR(
          decoder.Forward(*cache, {extra[i]}, o.prompt_tokens + i, LogitsMode::kLast).status());
    }
    decode.push_back(o.decode_tokens / Seconds(start));
  }

  // One forward pass over b tokens after the prompt, as a verify pass runs (all logits),
  // timed right after a one-token pass so both see the same machine load; the ratio of each
  // pair, median over repetitions.
  auto pass_seconds = [&](int64_t b) -> absl::StatusOr<double> {
    const auto start = Clock::now();
    RETURN_IF_ERROR(decoder
                        .Forward(*cache, absl::MakeConstSpan(extra).subspan(0, b), o.prompt_tokens,
                                 LogitsMode::kAll)
                        .status());
    return Seconds(start);
  };

  // One decode step of n sessions at once (a ragged batch of n one-row segments, each with
  // its own cache after the prompt, as the worker's scheduler runs them), against one
  // session's step.
  auto session_step_ratio = [&](int64_t n) -> absl::StatusOr<double> {
    std::vector<std::unique_ptr<KvCache>> caches;
    for (int64_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(caches.emplace_back(), decoder.NewCache(context, o.kv));
      RETURN_IF_ERROR(decoder.Forward(*caches.back(), prompt, 0, LogitsMode::kLast).status());
    }
    auto step = [&](int64_t sessions) -> absl::StatusOr<double> {
      std::vector<ForwardSegment> segments;
      for (int64_t i = 0; i < sessions; ++i) {
        segments.push_back({caches[i].get(), absl::MakeConstSpan(extra).subspan(i, 1),
                            o.prompt_tokens, LogitsMode::kLast});
      }
      const auto start = Clock::now();
      RETURN_IF_ERROR(decoder.ForwardBatch(segments).status());
      return Seconds(start);
    };
    return PairedRatio(std::max(o.reps, 7), step, n);
  };

  const double decode_tok_s = Median(decode);
  // Peak memory of loading and inference, read before the bandwidth probe's own buffer.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double bandwidth = MeasureReadBandwidth(o.threads);
  const int64_t weight_bytes = WeightBytesPerToken(*model);

  BenchReport report;
  report.emplace_back("model", model->path());
  report.emplace_back("weight_type", model->weight_type());
  report.emplace_back("parameters", absl::StrCat(model->parameter_count()));
  report.emplace_back("kernel_isa", std::string(KernelIsaName(DetectKernelIsa())));
  report.emplace_back("threads", absl::StrCat(o.threads));
  report.emplace_back("kv_type", std::string(KvTypeName(o.kv)));
  report.emplace_back("activations", std::string(ActivationPrecisionName(o.activations)));
  report.emplace_back("prefill_tok_s", Fixed(Median(prefill), 2));
  report.emplace_back("decode_tok_s", Fixed(decode_tok_s, 2));
  for (int64_t b : o.batches) {
    ASSIGN_OR_RETURN(double ratio, PairedRatio(std::max(o.reps, 7), pass_seconds, b));
    report.emplace_back(absl::StrCat("batch_", b, "_cost_ratio"), Fixed(ratio, 3));
  }
  for (int64_t n : o.sessions) {
    ASSIGN_OR_RETURN(double ratio, session_step_ratio(n));
    report.emplace_back(absl::StrCat("sessions_", n, "_step_ratio"), Fixed(ratio, 3));
  }
  report.emplace_back("weight_bytes_per_token", absl::StrCat(weight_bytes));
  report.emplace_back("packed_weight_bytes", absl::StrCat(model->packed_bytes()));
  report.emplace_back("bandwidth_gb_s", Fixed(bandwidth, 2));
  report.emplace_back("decode_limit_tok_s", Fixed(bandwidth * 1e9 / weight_bytes, 2));
  report.emplace_back("decode_fraction_of_limit",
                      Fixed(decode_tok_s * weight_bytes / (bandwidth * 1e9), 3));
  report.emplace_back("peak_rss_bytes", absl::StrCat(int64_t{usage.ru_maxrss} * 1024));
  return report;
}

}  // namespace tandem
