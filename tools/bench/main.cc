// tandem-bench MODEL [--threads N] [--kv f16|f32|i8] [-p 128] [-n 64] [--batch 1,2,5,9]
//                    [--sessions 8,16] [--activations int16|int8]
//                    [--reps R]
// Prints one `key value` line per figure.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "tools/bench/bench.h"

ABSL_FLAG(int, threads, 2, "threads for the forward pass");
ABSL_FLAG(std::string, kv, "f16",
          "KV cache type: f32, f16 or i8 (i8: under half of f16's bytes; greedy output close "
          "to f32's, not equal: README 'KV cache types')");
ABSL_FLAG(std::string, activations, "int16",
          "quantized matmuls' activation precision: int16 or int8 (README 'Activation "
          "precision'; float weights ignore it)");
ABSL_FLAG(int, p, 128, "prompt tokens for the prefill measurement");
ABSL_FLAG(int, n, 64, "tokens for the decode measurement");
ABSL_FLAG(std::string, batch, "1,2,5,9", "batch sizes for the verify cost ratio");
ABSL_FLAG(std::string, sessions, "",
          "session counts for the cost of one decode step of that many sessions at once");
ABSL_FLAG(int, reps, 3, "repetitions; each figure is the median");

int main(int argc, char** argv) {
  // The binaries' one parser: --help / --version answer with exit 0, a bad flag exits 2.
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-bench", "0.1.0",
       "Measures prefill/decode speed and verify cost of a model.\n"
       "usage: tandem-bench MODEL [--threads N] [--kv f16|f32|i8] [-p 128] [-n 64]\n"
       "       [--batch 1,2,5,9] [--sessions 8,16] [--reps R] [--activations int16|int8]",
       "tools/bench/main.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-bench: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->size() != 1) {
    std::fprintf(stderr, "tandem-bench: expected one MODEL argument (see --help)\n");
    return 2;
  }
  tandem::BenchOptions options;
  options.model_path = (*args)[0];
  options.threads = absl::GetFlag(FLAGS_threads);
  options.prompt_tokens = absl::GetFlag(FLAGS_p);
  options.decode_tokens = absl::GetFlag(FLAGS_n);
  options.reps = absl::GetFlag(FLAGS_reps);
  absl::StatusOr<tandem::KvType> kv = tandem::ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) {
    std::fprintf(stderr, "tandem-bench: --kv: %s\n", std::string(kv.status().message()).c_str());
    return 2;
  }
  options.kv = *kv;
  absl::StatusOr<tandem::ActivationPrecision> activations =
      tandem::ParseActivationPrecision(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) {
    std::fprintf(stderr, "tandem-bench: --activations: %s\n",
                 std::string(activations.status().message()).c_str());
    return 2;
  }
  options.activations = *activations;
  // A list of sizes in [1, max] for `flag`; false (after saying why) if one is not.
  auto sizes = [](const char* flag, const std::string& text, int64_t max,
                  std::vector<int64_t>* out) {
    out->clear();
    for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
      int64_t b;
      if (!absl::SimpleAtoi(part, &b) || b < 1 || b > max) {
        std::fprintf(stderr, "tandem-bench: --%s: '%s' is not a size in [1, %lld]\n", flag,
                     std::string(part).c_str(), static_cast<long long>(max));
        return false;
      }
      out->push_back(b);
    }
    return true;
  };
  if (!sizes("batch", absl::GetFlag(FLAGS_batch), 512, &options.batches) ||
      !sizes("sessions", absl::GetFlag(FLAGS_sessions), 64, &options.sessions)) {
    return 2;
  }
  absl::StatusOr<tandem::BenchReport> report = tandem::RunBench(options);
  if (!report.ok()) {
    std::fprintf(stderr, "tandem-bench: %s\n", report.status().ToString().c_str());
    return 1;
  }
  for (const auto& [key, value] : *report) std::printf("%s %s\n", key.c_str(), value.c_str());
  return 0;
}
