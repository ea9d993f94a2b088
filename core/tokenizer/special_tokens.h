// Which ids end a model's turn: EOS and the end-of-turn control tokens of common chat formats
// (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>) that the
// vocabulary has.
#ifndef TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_
#define TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_

#include <cstdint>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace tandem {

// EOS first (when the vocabulary has one), then the others in increasing id order.
std::vector<int32_t> EndOfTurnIds(const Tokenizer& tokenizer);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_SPECIAL_TOKENS_H_
