// The built-in format (builtin_formats.h) a vocabulary's special tokens point to, for a model
// that ships no chat template: a Llama 3, Qwen (ChatML), Gemma or Phi-3 vocabulary is only
// ever prompted in its family's format, and the raw format would never produce the
// end-of-turn token its generation stops at.
#ifndef TANDEM_CORE_CHAT_FAMILY_FORMAT_H_
#define TANDEM_CORE_CHAT_FAMILY_FORMAT_H_

#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace tandem::chat {

// "llama3" (<|start_header_id|>, <|end_header_id|>, <|eot_id|>), "chatml" (<|im_start|>,
// <|im_end|>), "gemma" (<start_of_turn>, <end_of_turn>) or "phi3" (<|user|>, <|assistant|>,
// <|end|>) when the vocabulary has all of that family's tokens (`has_token` says whether a
// token of exactly this text exists); nullopt otherwise.
std::optional<std::string> FamilyFormatName(absl::FunctionRef<bool(absl::string_view)> has_token);

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_FAMILY_FORMAT_H_
