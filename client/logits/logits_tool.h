// The logic of tandem-logits (client/logits/main.cc holds only the flags):
//
//   tandem-logits --model FILE_OR_DIR (--tokens ID,ID,... | --tokens-file F) [--out OUT.npy]
//                 [--compare REF.npy [--atol X]] [--kl-base BASE.npy] [--threads N]
//                 [--activations int16|int8]
//
// Runs the ids in one forward pass with logits at every position (logits_runner.h).
//  --out       writes them as a float32 C-order .npy of shape [n_tokens, n_vocab];
//  --compare   prints max abs (and where), rms and argmax agreement against REF.npy ('<f4' or
//              '<f8', the same shape), and fails when max abs exceeds --atol (default 5e-3);
//  --kl-base   prints the mean, p99 and max over positions of KL(base ‖ this) and top-token
//              agreement against BASE.npy (e.g. the F16 file's logits of the same ids).
//  --activations  the quantized matmuls' activation precision (core/kernels/matmul.h; default
//              int16; float weights ignore it).
// At least one of the three is needed. Token ids are separated by commas and/or whitespace (a
// surrounding [ ] is allowed, so a JSON list can be pasted).
//
// Output: one "name value" line per figure on stdout. Exit status: 0 on success, 1 when
// --compare exceeds --atol (or a figure is NaN), 2 for a bad command line or input (a missing
// or malformed file, a shape mismatch, ids outside the vocabulary, no ids, a model Tandem
// cannot load), with one line naming the culprit on stderr.
#ifndef TANDEM_CLIENT_LOGITS_LOGITS_TOOL_H_
#define TANDEM_CLIENT_LOGITS_LOGITS_TOOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

struct LogitsToolOptions {
  std::string model;
  std::string tokens;       // "1,403,407"
  std::string tokens_file;  // a file of ids
  std::string out;          // .npy to write
  std::string compare;      // reference .npy
  double atol = 5e-3;       // max abs allowed by --compare
  std::string kl_base;      // base .npy for KL
  int threads = 2;
  std::string activations = "int16";  // ParseActivationPrecision's names
};

struct LogitsToolResult {
  int exit_code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr: one line per error
};

LogitsToolResult RunLogitsTool(const LogitsToolOptions& options);

// Token ids separated by commas and/or whitespace, optionally inside [ ]; `source` names the
// text in messages ("--tokens", the file). kInvalidArgument for an item that is not a
// non-negative 32-bit integer, naming it and its position, or for no ids at all.
absl::StatusOr<std::vector<int32_t>> ParseTokenIds(absl::string_view text,
                                                   absl::string_view source);

}  // namespace tandem

#endif  // TANDEM_CLIENT_LOGITS_LOGITS_TOOL_H_
