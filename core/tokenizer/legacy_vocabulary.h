// Vocabularies from the files tokenizers shipped before tokenizer.json:
//  - SentencePiece's tokenizer.model (a ModelProto: pieces with scores and types, the trainer's
//    model type and special ids, the normaliser's dummy-prefix flag), read with a small
//    protobuf wire-format reader. Only BPE models are supported (Unigram is kUnimplemented).
//  - GPT-2's encoder.json (token text -> id) + vocab.bpe (merges, one "a b" per line, an
//    optional "#version" first line), with the byte-level pre-tokenizer family to use.
// Malformed files are kDataLoss naming the field or line.
#ifndef TANDEM_CORE_TOKENIZER_LEGACY_VOCABULARY_H_
#define TANDEM_CORE_TOKENIZER_LEGACY_VOCABULARY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

// `bytes`: the contents of a tokenizer.model.
absl::StatusOr<Vocabulary> VocabularyFromSentencePiece(absl::string_view bytes);

// `encoder_json`, `vocab_bpe`: file contents; `pre_tokenizer`: a family of pre_tokenizer.h
// ("gpt-2", "llama-bpe", ...), which also decides ignore_merges.
absl::StatusOr<Vocabulary> VocabularyFromGpt2Files(absl::string_view encoder_json,
                                                   absl::string_view vocab_bpe,
                                                   absl::string_view pre_tokenizer);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_LEGACY_VOCABULARY_H_
