// A constraint that starts after a reasoning model's reasoning (ConstraintSpec::reasoning):
// the grammar of <think>...</think> and the whitespace after it, then the constrained grammar.
//
//   kNone      the constrained grammar itself.
//   kInPrompt  the prompt opened the reasoning (DeepSeek-R1's template ends in "<think>\n"):
//              free text that never holds "</think>" (and may not end the output), then
//              "</think>", up to kReasoningGapWhitespace whitespace characters, then the
//              constrained part.
//   kOptional  the output may open with "<think>", such text and "</think>" and whitespace;
//              or the constrained part starts at once.
// "<think>" and "</think>" are text or added tokens in the families that use them (DeepSeek-R1
// distills, Qwen3); where a vocabulary makes them control tokens, their control-token form
// (special_token.h) is accepted too.
//
// Thread-safe: plain functions.
#ifndef TANDEM_CORE_GRAMMAR_REASONING_PREFIX_H_
#define TANDEM_CORE_GRAMMAR_REASONING_PREFIX_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/grammar.h"

namespace tandem {

inline constexpr int32_t kReasoningGapWhitespace = 16;

// `constrained` behind the reasoning `reasoning` asks for. kInvalidArgument if the result
// would be past the default GrammarLimits.
absl::StatusOr<Grammar> WithReasoningPrefix(Grammar constrained, ReasoningPrefix reasoning);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REASONING_PREFIX_H_
