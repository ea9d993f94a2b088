#include "core/tokenizer/special_tokens.h"

#include <algorithm>

namespace tandem {

std::vector<int32_t> EndOfTurnIds(const Tokenizer& tokenizer) {
  static constexpr const char* kEndOfTurnTexts[] = {"<|eot_id|>",    "<|im_end|>",    "<|end|>",
                                                    "<end_of_turn>", "<|endoftext|>", "<|eom_id|>"};
  std::vector<int32_t> others = tokenizer.vocabulary().end_of_turn_ids;
  for (const char* text : kEndOfTurnTexts) {
    if (std::optional<int32_t> id = tokenizer.TokenId(text); id.has_value()) {
      others.push_back(*id);
    }
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  std::vector<int32_t> ids;
  const std::optional<int32_t> eos = tokenizer.vocabulary().eos_id;
  if (eos.has_value()) ids.push_back(*eos);
  for (int32_t id : others) {
    if (!eos.has_value() || id != *eos) ids.push_back(id);
  }
  return ids;
}

std::string SpecialTokenText(const Tokenizer& tokenizer, std::optional<int32_t> id) {
  if (!id.has_value() || *id < 0 || *id >= tokenizer.vocab_size()) return "";
  return tokenizer.vocabulary().tokens[*id];
}

}  // namespace tandem
