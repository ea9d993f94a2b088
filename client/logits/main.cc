// tandem-logits: a model's logits at every position of a token sequence, written as .npy and
// compared with a reference (max abs, rms, argmax; KL against a base). See
// client/logits/logits_tool.h for the options and exit codes.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "client/logits/logits_tool.h"
#include "core/base/command_line.h"

ABSL_FLAG(std::string, model, "", "GGUF file or Hugging Face folder");
ABSL_FLAG(std::string, tokens, "", "token ids, e.g. 1,403,407");
ABSL_FLAG(std::string, tokens_file, "", "a file of token ids (commas and/or whitespace)");
ABSL_FLAG(std::string, out, "", "write the logits [n_tokens, n_vocab] as float32 .npy here");
ABSL_FLAG(std::string, compare, "", "reference .npy to compare with (max abs, rms, argmax)");
ABSL_FLAG(double, atol, 5e-3, "--compare fails (exit 1) when max abs exceeds this");
ABSL_FLAG(std::string, kl_base, "", "base .npy: print KL(base || this) mean/p99/max and top-1");
ABSL_FLAG(int, threads, 2, "threads for the forward pass");
ABSL_FLAG(std::string, activations, "int16",
          "quantized matmuls' activation precision: int16 or int8 (README 'Activation "
          "precision'; float weights ignore it)");

int main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-logits", "0.1.0",
       "A model's logits at every position of a token sequence, as .npy, compared with a\n"
       "reference.\n"
       "usage: tandem-logits --model FILE_OR_DIR (--tokens ID,ID,... | --tokens-file F)\n"
       "                     [--out OUT.npy] [--compare REF.npy [--atol X]] [--kl-base BASE.npy]\n"
       "                     [--threads N] [--activations int16|int8]\n"
       "exit status: 0 ok, 1 --compare beyond --atol, 2 bad command line or input",
       "client/logits/main.cc"});
  if (!args.ok()) {
    std::fprintf(stderr, "tandem-logits: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (!args->empty()) {
    std::fprintf(stderr, "tandem-logits: unexpected argument '%s' (see --help)\n",
                 args->front().c_str());
    return 2;
  }
  tandem::LogitsToolOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.tokens = absl::GetFlag(FLAGS_tokens);
  options.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  options.out = absl::GetFlag(FLAGS_out);
  options.compare = absl::GetFlag(FLAGS_compare);
  options.atol = absl::GetFlag(FLAGS_atol);
  options.kl_base = absl::GetFlag(FLAGS_kl_base);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.activations = absl::GetFlag(FLAGS_activations);
  const tandem::LogitsToolResult result = tandem::RunLogitsTool(options);
  std::fwrite(result.out.data(), 1, result.out.size(), stdout);
  std::fwrite(result.err.data(), 1, result.err.size(), stderr);
  return result.exit_code;
}
