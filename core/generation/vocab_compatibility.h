// Whether a draft model can speculate for a target: their token ids must mean the same
// thing. Same tokenizer type, same BOS/EOS, equal token texts over the ids both have, and
// vocabulary sizes at most kMaxVocabSizeDifference apart (padding rows; a draft id beyond the
// target's vocabulary is simply rejected by the acceptance rule).
#ifndef TANDEM_CORE_GENERATION_VOCAB_COMPATIBILITY_H_
#define TANDEM_CORE_GENERATION_VOCAB_COMPATIBILITY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/decoder/model.h"
#include "core/model/gguf_reader.h"

namespace tandem {

inline constexpr int64_t kMaxVocabSizeDifference = 128;

// OK, or kFailedPrecondition saying what differs (sizes, tokenizer type, a special id, the
// first token whose text differs).
//
// Token texts, tokenizer type and special ids are compared from the GGUF metadata when both
// models are GGUF files; Hugging Face folders are compared by vocabulary size only.
// TODO(tokenizer): compare the tokenizer library's vocabulary fingerprints (type, specials,
// texts) for every format once core/tokenizer lands; the coordinator needs the same check
// from two workers' Describe replies.
absl::Status CheckDraftCompatible(const Model& target, const Model& draft);

// The GGUF part of the check: tokenizer.ggml.model, the BOS and EOS ids, and the texts of
// tokenizer.ggml.tokens over the ids both files have.
absl::Status CheckGgufVocabulariesCompatible(const GgufFile& target, const GgufFile& draft);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_VOCAB_COMPATIBILITY_H_
