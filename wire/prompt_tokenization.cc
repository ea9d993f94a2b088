#include "wire/prompt_tokenization.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "core/base/utf8_repair.h"
#include "core/chat/chat_template.h"
#include "core/chat/prompt_renderer.h"
#include "core/chat/tool_messages.h"

namespace tandem {
namespace {

// A call as OpenAI writes it; the renderer gives it the shape the template wants
// (core/chat/tool_messages.h).
json::Value ToolCallJson(const v1::ToolCall& call) {
  json::Object function{{"name", call.name()}, {"arguments", call.arguments()}};
  json::Object out;
  if (!call.id().empty()) out.Set("id", json::Value(call.id()));
  out.Set("type", json::Value("function"));
  out.Set("function", json::Value(std::move(function)));
  return json::Value(std::move(out));
}

std::vector<chat::ChatMessage> Messages(const v1::ChatConversation& chat) {
  std::vector<chat::ChatMessage> messages;
  for (const v1::ChatMessage& m : chat.messages()) {
    chat::ChatMessage message{m.role(), json::Value(m.content()), {}};
    if (m.has_name()) message.extra.Set("name", json::Value(m.name()));
    if (m.tool_calls_size() > 0) {
      // An assistant turn that only called tools has no text: null, as OpenAI sends it.
      if (m.content().empty()) message.content = json::Value(nullptr);
      json::Array calls;
      for (const v1::ToolCall& call : m.tool_calls()) calls.push_back(ToolCallJson(call));
      message.extra.Set("tool_calls", json::Value(std::move(calls)));
    }
    if (!m.tool_call_id().empty()) {
      message.extra.Set("tool_call_id", json::Value(m.tool_call_id()));
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

// The tools as templates read them (OpenAI's shape). A tool's parameters are JSON text that
// the coordinator has checked; one that does not parse is refused naming the tool.
absl::StatusOr<json::Array> Tools(const v1::ChatConversation& chat) {
  json::Array tools;
  for (const v1::Tool& tool : chat.tools()) {
    // Templates read the description whether or not there is one (functionary's concatenates it).
    json::Object function{{"name", tool.name()}, {"description", tool.description()}};
    json::Value parameters = json::Object{};
    if (!tool.parameters_json().empty()) {
      absl::StatusOr<json::Value> parsed = json::Parse(tool.parameters_json());
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("tool '", tool.name(),
                                                       "': parameters are not JSON: ",
                                                       parsed.status().message()));
      }
      parameters = std::move(*parsed);
    }
    function.Set("parameters", std::move(parameters));
    tools.push_back(json::Object{{"type", "function"}, {"function", std::move(function)}});
  }
  return tools;
}

// The template's variables: the tools and the time (tool_messages.h), then the request's
// template_kwargs_json over them. The kwargs may not set what the request's own fields set.
absl::StatusOr<json::Object> TemplateContext(const v1::ChatConversation& chat,
                                             const json::Array& tools) {
  json::Object context = chat::ToolTemplateContext(tools, absl::Now());
  if (chat.template_kwargs_json().empty()) return context;
  json::ParseOptions options;
  options.max_depth = kMaxTemplateKwargsDepth;
  absl::StatusOr<json::Value> kwargs = json::Parse(chat.template_kwargs_json(), options);
  if (!kwargs.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chat_template_kwargs is not JSON: ", kwargs.status().message()));
  }
  if (!kwargs->is_object()) {
    return absl::InvalidArgumentError("chat_template_kwargs must be a JSON object");
  }
  for (const auto& [key, value] : kwargs->as_object()) {
    if (chat::IsRenderVariable(key) || key == "tools" || key == "functions") {
      return absl::InvalidArgumentError(absl::StrCat(
          "chat_template_kwargs may not set '", key, "' (the request's own fields set it)"));
    }
    context.Set(key, value);
  }
  return context;
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
      absl::StatusOr<json::Array> tools = Tools(chat);
      if (!tools.ok()) return tools.status();
      absl::StatusOr<json::Object> context = TemplateContext(chat, *tools);
      if (!context.ok()) return context.status();
      absl::StatusOr<chat::RenderedPrompt> rendered =
          renderer->Render(Messages(chat), generation_prompt, *context);
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
