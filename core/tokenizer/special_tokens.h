// Which ids end a model's turn: EOS, the ids the model's files declare (GGUF
// tokenizer.ggml.eot_token_id / eom_token_id, generation_config.json's or config.json's
// eos_token_id list: Vocabulary::end_of_turn_ids), and the end-of-turn tokens of the common chat
// formats
// (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>) that the
// vocabulary has, so that a file which names none still stops at its family's.
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
