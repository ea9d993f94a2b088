#include "core/chat/chat_template.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem::chat {

bool IsRenderVariable(absl::string_view name) {
  return name == "messages" || name == "add_generation_prompt" || name == "bos_token" ||
         name == "eos_token";
}

json::Value ChatMessage::ToJson() const {
  json::Object object;
  object.Set("role", role);
  object.Set("content", content);
  for (const auto& [key, value] : extra) {
    if (key != "role" && key != "content") object.Set(key, value);
  }
  return json::Value(std::move(object));
}

absl::StatusOr<ChatTemplate> ChatTemplate::Create(absl::string_view source,
                                                  ChatTemplateOptions options) {
  jinja::ParserOptions parser_options;
  parser_options.lexer.trim_blocks = options.trim_blocks;
  parser_options.lexer.lstrip_blocks = options.lstrip_blocks;
  ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::Parse(source, parser_options));
  if (!options.clock) options.clock = [] { return absl::Now(); };
  return ChatTemplate(std::move(t),
                      std::make_shared<const ChatTemplateOptions>(std::move(options)));
}

absl::StatusOr<std::string> ChatTemplate::Render(const json::Value& messages,
                                                 bool add_generation_prompt,
                                                 const json::Object& extra_context) const {
  if (!messages.is_array()) {
    return absl::InvalidArgumentError("chat messages must be a JSON array");
  }
  for (const json::Value& m : messages.as_array()) {
    if (!m.is_object()) return absl::InvalidArgumentError("each chat message must be an object");
  }
  using jinja::Value;
  std::vector<std::pair<std::string, Value>> globals;
  for (const auto& [key, value] : extra_context) {
    if (IsRenderVariable(key)) {
      return absl::InvalidArgumentError(absl::StrCat("extra context may not override '", key, "'"));
    }
    globals.emplace_back(key, jinja::FromJson(value));
  }
  globals.emplace_back("messages", jinja::FromJson(messages));
  globals.emplace_back("add_generation_prompt", Value(add_generation_prompt));
  globals.emplace_back("bos_token", Value(options_->bos_token));
  globals.emplace_back("eos_token", Value(options_->eos_token));
  globals.emplace_back(
      "raise_exception",
      jinja::MakeCallable("raise_exception", [](const jinja::CallArgs& a) -> absl::StatusOr<Value> {
        std::string message = a.positional.empty() ? "" : jinja::ToString(a.positional[0]);
        return absl::InvalidArgumentError(absl::StrCat("raise_exception: ", message));
      }));
  std::shared_ptr<const ChatTemplateOptions> options = options_;
  globals.emplace_back(
      "strftime_now",
      jinja::MakeCallable(
          "strftime_now", [options](const jinja::CallArgs& a) -> absl::StatusOr<Value> {
            if (a.positional.empty() || !a.positional[0].is_string()) {
              return absl::InvalidArgumentError("strftime_now needs a format string");
            }
            return Value(absl::FormatTime(a.positional[0].as_string(), options->clock(),
                                          options->time_zone));
          }));
  return template_.Render(globals, options_->limits);
}

absl::StatusOr<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                                 bool add_generation_prompt,
                                                 const json::Object& extra_context) const {
  json::Array array;
  array.reserve(messages.size());
  for (const ChatMessage& m : messages) array.push_back(m.ToJson());
  return Render(json::Value(std::move(array)), add_generation_prompt, extra_context);
}

}  // namespace tandem::chat
