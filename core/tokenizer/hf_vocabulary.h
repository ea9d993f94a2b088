// Reads a Vocabulary from a Hugging Face `tokenizer.json` (+ `tokenizer_config.json`).
//
// Supported: the BPE model (vocab, merges as "a b" strings or [a, b] pairs, unk_token,
// byte_fallback, fuse_unk, ignore_merges), `added_tokens` (special ones become control
// tokens, the others user-defined), and the normalisation of the two BPE families:
//  - byte-level: a ByteLevel pre-tokenizer, optionally after Split (regex, Isolated) and
//    Digits pre-tokenizers, whose regexes then replace GPT-2's;
//  - Metaspace: a Metaspace pre-tokenizer (prepend_scheme, split) or Llama's normaliser
//    Sequence[Prepend("▁"), Replace(" ", "▁")]. An NFC normaliser is accepted and not applied
//    (text that is already NFC, as nearly all text is, tokenizes exactly).
// BOS/EOS and add_bos_token/add_eos_token come from tokenizer_config.json, else from the
// post-processor's template.
//
// Errors: kDataLoss naming the culprit for malformed JSON or structure, kUnimplemented naming
// an unsupported model, normaliser or pre-tokenizer type.
#ifndef TANDEM_CORE_TOKENIZER_HF_VOCABULARY_H_
#define TANDEM_CORE_TOKENIZER_HF_VOCABULARY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

// `tokenizer_config_json` may be empty (no such file).
absl::StatusOr<Vocabulary> VocabularyFromTokenizerJson(absl::string_view tokenizer_json,
                                                       absl::string_view tokenizer_config_json);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_HF_VOCABULARY_H_
