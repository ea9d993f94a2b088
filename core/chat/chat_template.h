// Chat templates: turn a conversation into the prompt text a model was trained on, by rendering
// the model's own Jinja chat template the way Hugging Face transformers' apply_chat_template
// does (trim_blocks, lstrip_blocks, loop controls, raise_exception, strftime_now, tojson with
// ensure_ascii=False).
//
//   ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Create(source, {.bos_token = "<s>"}));
//   ASSIGN_OR_RETURN(std::string prompt, t.Render(messages, /*add_generation_prompt=*/true));
//
// The template sees `messages` (a list of dicts: role, content and any extra fields such as
// tool_calls), `add_generation_prompt`, `bos_token`, `eos_token`, every key of the extra
// context (e.g. `tools`, `documents`), and the globals raise_exception(msg) and
// strftime_now(format).
//
// Errors are kInvalidArgument "template error at L:C: ..." (syntax errors at Create, run-time
// errors and the template's own raise_exception message at Render) or kResourceExhausted when
// a rendering exceeds its output, call-depth or loop limits.
//
// A ChatTemplate is immutable; Render is thread-safe.
#ifndef TANDEM_CORE_CHAT_CHAT_TEMPLATE_H_
#define TANDEM_CORE_CHAT_CHAT_TEMPLATE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/json.h"
#include "core/chat/jinja_interpreter.h"

namespace tandem::chat {

// One turn of a conversation.
struct ChatMessage {
  std::string role;
  // A string, or structured content (e.g. a list of {"type": "text", "text": ...} parts).
  json::Value content;
  // Further fields the template may read: tool_calls, tool_call_id, name, ...
  json::Object extra;

  // {"role": ..., "content": ..., extra fields...} in that order.
  json::Value ToJson() const;
};

struct ChatTemplateOptions {
  std::string bos_token;
  std::string eos_token;
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  // The clock and zone strftime_now() reads; tests fix them. Default: absl::Now, local time.
  std::function<absl::Time()> clock;
  absl::TimeZone time_zone = absl::LocalTimeZone();
  jinja::RenderOptions limits;
};

// Whether `name` is a variable Render sets itself (messages, add_generation_prompt,
// bos_token, eos_token), which extra context may not set.
bool IsRenderVariable(absl::string_view name);

class ChatTemplate {
 public:
  static absl::StatusOr<ChatTemplate> Create(absl::string_view source,
                                             ChatTemplateOptions options = {});

  // `messages` must be a JSON array of objects; `extra_context` keys become template variables
  // (they cannot override messages, add_generation_prompt, bos_token or eos_token).
  absl::StatusOr<std::string> Render(const json::Value& messages, bool add_generation_prompt,
                                     const json::Object& extra_context = {}) const;
  absl::StatusOr<std::string> Render(const std::vector<ChatMessage>& messages,
                                     bool add_generation_prompt,
                                     const json::Object& extra_context = {}) const;

  const ChatTemplateOptions& options() const { return *options_; }

 private:
  ChatTemplate(jinja::Template t, std::shared_ptr<const ChatTemplateOptions> options)
      : template_(std::move(t)), options_(std::move(options)) {}

  jinja::Template template_;
  std::shared_ptr<const ChatTemplateOptions> options_;
};

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_CHAT_TEMPLATE_H_
