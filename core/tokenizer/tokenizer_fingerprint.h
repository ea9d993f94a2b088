// A digest of everything that decides how a prompt becomes token ids: every field of a
// Vocabulary (token texts and types, scores, merges, pre-tokenizer, special ids, flags) and the
// chat template conversations are rendered with.
//
// VocabularyFingerprint (vocabulary.h) only says that two vocabularies map ids to the same text,
// which is what a draft and a target must share; two tokenizers with equal vocabulary
// fingerprints can still split text differently (another merge list, pre-tokenizer or BOS
// rule). TokenizerFingerprint tells the coordinator whether its copy of a worker's tokenizer
// encodes exactly as the worker does.
#ifndef TANDEM_CORE_TOKENIZER_TOKENIZER_FINGERPRINT_H_
#define TANDEM_CORE_TOKENIZER_TOKENIZER_FINGERPRINT_H_

#include <optional>
#include <string>

#include "core/tokenizer/vocabulary.h"

namespace tandem {

// 16 hex digits (FNV-1a 64, fnv1a64.h). A template that is absent differs from an empty one.
// A new Vocabulary field must be added here (and to the wire form, tokenizer_wire.h).
std::string TokenizerFingerprint(const Vocabulary& vocab,
                                 const std::optional<std::string>& chat_template);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_TOKENIZER_FINGERPRINT_H_
