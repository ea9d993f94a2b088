// Reads a Vocabulary from GGUF metadata (the `tokenizer.ggml.*` keys llama.cpp writes).
//
//   tokenizer.ggml.model     "llama" (SentencePiece BPE), "gpt2" (byte-level BPE) or "bert"
//                            (WordPiece); anything else is kUnimplemented
//   tokenizer.ggml.tokens / .scores / .token_type / .merges / .pre
//   tokenizer.ggml.{bos,eos,unknown,padding}_token_id, .add_bos_token, .add_eos_token,
//   tokenizer.ggml.add_space_prefix
//
// Defaults follow llama.cpp: "llama" adds BOS and the dummy-prefix space, has <unk> = 0,
// <s> = 1, </s> = 2; "gpt2" adds nothing and ignores merges for the Llama-3 pre-tokenizer;
// an id of 0xFFFFFFFF means "none". kDataLoss naming the key for missing or inconsistent keys.
#ifndef TANDEM_CORE_TOKENIZER_GGUF_VOCABULARY_H_
#define TANDEM_CORE_TOKENIZER_GGUF_VOCABULARY_H_

#include "absl/status/statusor.h"
#include "core/model/gguf_reader.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

absl::StatusOr<Vocabulary> VocabularyFromGguf(const GgufFile& gguf);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_GGUF_VOCABULARY_H_
