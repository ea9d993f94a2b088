#include "wire/prompt_tokenization.h"

#include <utility>
#include <vector>

#include "core/base/utf8_repair.h"
#include "core/chat/builtin_formats.h"
#include "core/chat/chat_template.h"
#include "core/chat/family_format.h"
#include "core/tokenizer/special_tokens.h"

namespace tandem {
namespace {

// The built-in format a conversation renders with: the one it names; else "" (the model's own
// template) if the model has one; else its vocabulary's family format (family_format.h), as
// tandem-chat in-process; else raw.
std::string ChatFormat(const Tokenizer& tok, const std::optional<std::string>& chat_template,
                       const v1::ChatConversation& chat) {
  if (!chat.format().empty() || chat_template.has_value()) return chat.format();
  return chat::FamilyFormatName(
             [&](absl::string_view text) { return tok.TokenId(text).has_value(); })
      .value_or("raw");
}

// Renders a conversation with the model's template (or the built-in format `format`).
absl::StatusOr<std::string> RenderChat(const Tokenizer& tok,
                                       const std::optional<std::string>& chat_template,
                                       const std::string& format,
                                       const v1::ChatConversation& chat) {
  chat::ChatTemplateOptions options;
  options.bos_token = SpecialTokenText(tok, tok.vocabulary().bos_id);
  options.eos_token = SpecialTokenText(tok, tok.vocabulary().eos_id);
  std::vector<chat::ChatMessage> messages;
  for (const v1::ChatMessage& m : chat.messages()) {
    chat::ChatMessage message{m.role(), json::Value(m.content()), {}};
    if (m.has_name()) message.extra.Set("name", json::Value(m.name()));
    messages.push_back(std::move(message));
  }
  const bool generation_prompt =
      chat.has_add_generation_prompt() ? chat.add_generation_prompt() : true;
  absl::StatusOr<chat::ChatTemplate> t = format.empty()
                                             ? chat::ChatTemplate::Create(*chat_template, options)
                                             : chat::BuiltinFormat(format, options);
  if (!t.ok()) return t.status();
  return t->Render(messages, generation_prompt);
}

}  // namespace

absl::StatusOr<v1::TokenizeResponse> TokenizePrompt(const Tokenizer& tokenizer,
                                                    const std::optional<std::string>& chat_template,
                                                    const v1::TokenizeRequest& request) {
  EncodeOptions options{request.add_special(), request.parse_special()};
  std::string text;
  switch (request.input_case()) {
    case v1::TokenizeRequest::kText:
      text = request.text();
      break;
    case v1::TokenizeRequest::kChat: {
      const std::string format = ChatFormat(tokenizer, chat_template, request.chat());
      absl::StatusOr<std::string> rendered =
          RenderChat(tokenizer, chat_template, format, request.chat());
      if (!rendered.ok()) return rendered.status();
      text = *std::move(rendered);
      // The template writes BOS and the control tokens itself (raw: BOS as the model says).
      options.parse_special = format != "raw";
      options.add_special = !options.parse_special;
      break;
    }
    default:
      return absl::InvalidArgumentError("tokenize: set `text` or `chat`");
  }
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, options);
  if (!ids.ok()) return ids.status();
  v1::TokenizeResponse response;
  response.mutable_token_ids()->Assign(ids->begin(), ids->end());
  response.set_rendered_text(utf8::ReplaceInvalid(text));  // a template may cut characters
  return response;
}

}  // namespace tandem
