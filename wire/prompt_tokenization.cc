#include "wire/prompt_tokenization.h"

#include <utility>
#include <vector>

#include "core/base/utf8_repair.h"
#include "core/chat/chat_template.h"
#include "core/chat/prompt_renderer.h"

namespace tandem {
namespace {

std::vector<chat::ChatMessage> Messages(const v1::ChatConversation& chat) {
  std::vector<chat::ChatMessage> messages;
  for (const v1::ChatMessage& m : chat.messages()) {
    chat::ChatMessage message{m.role(), json::Value(m.content()), {}};
    if (m.has_name()) message.extra.Set("name", json::Value(m.name()));
    messages.push_back(std::move(message));
  }
  return messages;
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
      // The one rendering policy (prompt_renderer.h), as tandem-chat in-process.
      const v1::ChatConversation& chat = request.chat();
      absl::StatusOr<chat::PromptRenderer> renderer =
          chat::PromptRenderer::Create(tokenizer, chat.format(), chat_template);
      if (!renderer.ok()) return renderer.status();
      const bool generation_prompt =
          chat.has_add_generation_prompt() ? chat.add_generation_prompt() : true;
      absl::StatusOr<chat::RenderedPrompt> rendered =
          renderer->Render(Messages(chat), generation_prompt);
      if (!rendered.ok()) return rendered.status();
      text = std::move(rendered->text);
      options = rendered->encode;
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
