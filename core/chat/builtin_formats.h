// Built-in prompt formats for models that ship no chat template, or for `--format NAME`.
// Each is a Jinja template rendered by the same interpreter as a model's own template:
//
//   chatml   <|im_start|>{role}\n{content}<|im_end|>\n ... [<|im_start|>assistant\n]
//   llama2   {bos}[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {answer} {eos}{bos}[INST]
//   ... llama3   {bos}<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|> ...
//            [<|start_header_id|>assistant<|end_header_id|>\n\n]
//   mistral  {bos}[INST] {user} [/INST]{answer}{eos}[INST] ... (system text + "\n\n" leads the
//            first user turn)
//   phi3     <|{role}|>\n{content}<|end|>\n ... [<|assistant|>\n]
//   gemma    {bos}<start_of_turn>{user|model}\n{content}<end_of_turn>\n ...
//   [<start_of_turn>model\n]
//            (system text + "\n\n" leads the first user turn)
//   zephyr   <|{role}|>\n{content}{eos}\n ... [<|assistant|>\n]
//   raw      the message contents concatenated: the text is the prompt
//
// Content may be a string or a list of {"type": "text", "text": ...} parts (text parts joined).
#ifndef TANDEM_CORE_CHAT_BUILTIN_FORMATS_H_
#define TANDEM_CORE_CHAT_BUILTIN_FORMATS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/chat_template.h"

namespace tandem::chat {

// The known names, sorted.
std::vector<std::string> BuiltinFormatNames();

// The Jinja source of format `name`; kInvalidArgument listing the known names otherwise.
absl::StatusOr<std::string> BuiltinFormatSource(absl::string_view name);

// A ChatTemplate for format `name` (bos/eos and limits from `options`).
absl::StatusOr<ChatTemplate> BuiltinFormat(absl::string_view name,
                                           ChatTemplateOptions options = {});

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_BUILTIN_FORMATS_H_
