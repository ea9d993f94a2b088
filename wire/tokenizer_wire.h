// A worker's tokenizer on the wire: Vocabulary (core/tokenizer/vocabulary.h) and the chat
// template to v1::TokenizerData and back, field for field, so that the Tokenizer a coordinator
// builds from it encodes exactly as the worker's (TokenizerFingerprint of both sides is equal;
// tokenizer_wire_test checks it on every shared tokenizer file).
#ifndef TANDEM_WIRE_TOKENIZER_WIRE_H_
#define TANDEM_WIRE_TOKENIZER_WIRE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/vocabulary.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

void TokenizerToProto(const Vocabulary& vocab, const std::optional<std::string>& chat_template,
                      v1::TokenizerData* data);

// kDataLoss naming the field when the data cannot be a vocabulary (an unknown enum value,
// merge lists of different lengths); Tokenizer::Create validates the rest.
absl::StatusOr<Vocabulary> VocabularyFromProto(const v1::TokenizerData& data);

std::optional<std::string> ChatTemplateFromProto(const v1::TokenizerData& data);

}  // namespace tandem

#endif  // TANDEM_WIRE_TOKENIZER_WIRE_H_
