// Which ids end a model's turn: EOS and the end-of-turn control tokens of common chat formats
// (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>) that the
// vocabulary has.
#ifndef TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_
#define TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace tandem {

// EOS first (when the vocabulary has one), then the others in increasing id order.
std::vector<int32_t> EndOfTurnIds(const Tokenizer& tokenizer);

// The stored text of a special token (e.g. "<s>" for a chat template's bos_token); empty
// when `id` is unset or outside the vocabulary.
std::string SpecialTokenText(const Tokenizer& tokenizer, std::optional<int32_t> id);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_
