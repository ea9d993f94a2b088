// Opens a tokenizer from whatever a model ships:
//  - a GGUF file (its tokenizer.ggml.* metadata);
//  - a Hugging Face folder or its tokenizer.json (tokenizer_config.json beside it is read too);
//  - a SentencePiece tokenizer.model, or a folder holding one;
//  - a folder with GPT-2 style encoder.json + vocab.bpe (LoadOptions::pre_tokenizer names the
//    regex family, since these files do not).
// In a folder, tokenizer.json wins over tokenizer.model over encoder.json. kNotFound naming the
// path if nothing is there; parse errors as the readers report them.
#ifndef TANDEM_CORE_TOKENIZER_TOKENIZER_LOADER_H_
#define TANDEM_CORE_TOKENIZER_TOKENIZER_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

struct LoadOptions {
  // The pre-tokenizer family of encoder.json + vocab.bpe files ("gpt-2", "llama-bpe", ...).
  std::string pre_tokenizer = "gpt-2";
};

absl::StatusOr<Vocabulary> LoadVocabulary(const std::string& path, const LoadOptions& options = {});

absl::StatusOr<Tokenizer> LoadTokenizer(const std::string& path, const LoadOptions& options = {});

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_TOKENIZER_LOADER_H_
