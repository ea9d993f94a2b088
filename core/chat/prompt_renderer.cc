#include "core/chat/prompt_renderer.h"

#include <utility>

#include "core/chat/builtin_formats.h"
#include "core/chat/family_format.h"
#include "core/tokenizer/special_tokens.h"

namespace tandem::chat {

absl::StatusOr<PromptRenderer> PromptRenderer::Create(
    const Tokenizer& tokenizer, absl::string_view format,
    const std::optional<std::string>& model_template) {
  ChatTemplateOptions options;
  options.bos_token = SpecialTokenText(tokenizer, tokenizer.vocabulary().bos_id);
  options.eos_token = SpecialTokenText(tokenizer, tokenizer.vocabulary().eos_id);
  std::string name(format);
  PromptFormatSource source = PromptFormatSource::kNamed;
  if (name.empty() && model_template.has_value()) {
    absl::StatusOr<ChatTemplate> t = ChatTemplate::Create(*model_template, std::move(options));
    if (!t.ok()) return t.status();
    return PromptRenderer(*std::move(t), "model", PromptFormatSource::kModelTemplate);
  }
  if (name.empty()) {
    const std::optional<std::string> family = FamilyFormatName(
        [&](absl::string_view text) { return tokenizer.TokenId(text).has_value(); });
    source = family.has_value() ? PromptFormatSource::kFamily : PromptFormatSource::kRaw;
    name = family.value_or("raw");
  }
  absl::StatusOr<ChatTemplate> t = BuiltinFormat(name, std::move(options));
  if (!t.ok()) return t.status();
  return PromptRenderer(*std::move(t), std::move(name), source);
}

absl::StatusOr<RenderedPrompt> PromptRenderer::Render(const std::vector<ChatMessage>& messages,
                                                      bool add_generation_prompt,
                                                      const json::Object& extra_context) const {
  absl::StatusOr<std::string> text;
  if (HasToolMessages(messages)) {
    std::vector<ChatMessage> prepared = messages;
    if (absl::Status s = PrepareToolMessages(tool_call_shape(), &prepared); !s.ok()) return s;
    text = template_.Render(prepared, add_generation_prompt, extra_context);
  } else {
    text = template_.Render(messages, add_generation_prompt, extra_context);
  }
  if (!text.ok()) return text.status();
  RenderedPrompt prompt;
  prompt.text = *std::move(text);
  prompt.encode.parse_special = templated();
  prompt.encode.add_special = !templated();
  return prompt;
}

}  // namespace tandem::chat
