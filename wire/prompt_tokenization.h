// The one tokenization of a TokenizeRequest: plain text as asked, or a conversation rendered
// by the one rendering policy (core/chat/prompt_renderer.h: a named format, else the model's
// template, else its family's format, else raw) and then encoded as that policy says. The worker's
// Tokenize and the coordinator's own tokenization both call it, so that a coordinator holding
// the worker's tokenizer and template (tokenizer_wire.h) gets the worker's ids, byte for byte.
//
// Thread-safe (a Tokenizer is immutable).
#ifndef TANDEM_WIRE_PROMPT_TOKENIZATION_H_
#define TANDEM_WIRE_PROMPT_TOKENIZATION_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// How deep chat_template_kwargs may nest (JSON arrays and objects).
inline constexpr int kMaxTemplateKwargsDepth = 16;

// `chat_template`: the model's own template (Jinja source), if it has one. Errors: kInvalidArgument
// when neither text nor chat is set, or as rendering and encoding report them.
absl::StatusOr<v1::TokenizeResponse> TokenizePrompt(const Tokenizer& tokenizer,
                                                    const std::optional<std::string>& chat_template,
                                                    const v1::TokenizeRequest& request);

}  // namespace tandem

#endif  // TANDEM_WIRE_PROMPT_TOKENIZATION_H_
