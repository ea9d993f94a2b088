// The end-of-turn ids a Hugging Face folder's generation_config.json (or config.json)
// declares: its `eos_token_id`, one id or a list of them (Llama 3.1: [128001, 128008, 128009];
// Qwen2.5: [151645, 151643]; Gemma 3: [1, 106]). Generation stops at every one of them.
#ifndef TANDEM_CORE_TOKENIZER_GENERATION_CONFIG_H_
#define TANDEM_CORE_TOKENIZER_GENERATION_CONFIG_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

// The ids of `eos_token_id` in the order given (empty when the key is absent or null).
// kDataLoss naming the key for JSON that is not an object or an id that is not an integer in
// [0, vocab_size).
absl::StatusOr<std::vector<int32_t>> GenerationConfigEosIds(absl::string_view json,
                                                            int64_t vocab_size);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_GENERATION_CONFIG_H_
