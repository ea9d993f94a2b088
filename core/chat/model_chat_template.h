// Finds the chat template a model ships: GGUF `tokenizer.chat_template`, or in a Hugging Face
// folder chat_template.jinja, chat_template.json's `chat_template` (newer folders, e.g.
// Gemma 3), or `chat_template` in tokenizer_config.json (a string, or the "default" entry of
// a list of named templates), the first that exists.
#ifndef TANDEM_CORE_CHAT_MODEL_CHAT_TEMPLATE_H_
#define TANDEM_CORE_CHAT_MODEL_CHAT_TEMPLATE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::chat {

// The template source, or nullopt when the model has none. `model_path` is a .gguf file or
// a folder. kInvalidArgument naming the file for a malformed tokenizer_config.json.
absl::StatusOr<std::optional<std::string>> ModelChatTemplate(const std::string& model_path);

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_MODEL_CHAT_TEMPLATE_H_
