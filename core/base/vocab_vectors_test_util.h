// llama.cpp's tokenizer test vectors in the shared folder (models/vocab/NAME.inp and
// NAME.out): the test strings, separated by "\n__ggml_vocab_test__\n", and one line of
// space-separated reference ids per string.
#ifndef TANDEM_CORE_BASE_VOCAB_VECTORS_TEST_UTIL_H_
#define TANDEM_CORE_BASE_VOCAB_VECTORS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::testing {

struct VocabTestVectors {
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> outputs;  // outputs[i]: the ids of inputs[i]
};

// The vectors of models/vocab/`name` (e.g. "ggml-vocab-llama-bpe.gguf"): kNotFound naming a
// missing file, kDataLoss naming a field of the .out file that is not an id.
absl::StatusOr<VocabTestVectors> ReadVocabTestVectors(absl::string_view name);

}  // namespace tandem::testing

#endif  // TANDEM_CORE_BASE_VOCAB_VECTORS_TEST_UTIL_H_
