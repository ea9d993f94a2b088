// The one policy that turns a conversation into the text a model is prompted with, and says
// how that text is encoded. The worker's and the coordinator's tokenization
// (wire/prompt_tokenization.h) and tandem-chat in-process (client/chat/chat_engine.h) both
// render through it, so a conversation gets the same ids whichever of them tokenizes it.
//
// The format, first that applies:
//   1. the one the caller names (a built-in format, builtin_formats.h; "raw" included);
//   2. the model's own chat template;
//   3. the built-in format of the vocabulary's family (family_format.h);
//   4. raw: the message contents concatenated.
// Templates see the vocabulary's BOS and EOS texts as bos_token and eos_token. A template
// writes BOS and the control tokens itself, so templated text is encoded with control tokens
// parsed and nothing added; raw text is the user's own, encoded with control tokens left as
// text and BOS (EOS) added as the vocabulary says.
//
//   ASSIGN_OR_RETURN(PromptRenderer renderer, PromptRenderer::Create(tok, "", model_template));
//   ASSIGN_OR_RETURN(RenderedPrompt prompt, renderer.Render(messages, true));
//   ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(prompt.text, prompt.encode));
//
// A tool-using conversation renders the same way, with the request's tools in the extra
// context (tool_messages.h); Render brings earlier tool calls into the shape the template
// wants (ProbeToolCallShape, PrepareToolMessages) on its own:
//
//   renderer.Render(messages, true, ToolTemplateContext(tools, absl::Now()));
//
// A PromptRenderer is immutable; Render is thread-safe. It keeps no reference to the
// tokenizer.
#ifndef TANDEM_CORE_CHAT_PROMPT_RENDERER_H_
#define TANDEM_CORE_CHAT_PROMPT_RENDERER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/chat/chat_template.h"
#include "core/chat/tool_messages.h"
#include "core/tokenizer/tokenizer.h"

namespace tandem::chat {

// Which rule of the policy chose the format.
enum class PromptFormatSource {
  kNamed,          // the caller named it
  kModelTemplate,  // the model's own template
  kFamily,         // no template: the format of the vocabulary's family
  kRaw,            // no template and no family
};

struct RenderedPrompt {
  std::string text;
  EncodeOptions encode;  // how `text` is encoded (see the top of the file)
};

class PromptRenderer {
 public:
  // `format`: a built-in format's name, or empty to let the policy choose; `model_template`:
  // the model's own template (Jinja source), if it has one. kInvalidArgument for an unknown
  // format name ("unknown chat format 'x'; known: ...") or a template that does not parse.
  static absl::StatusOr<PromptRenderer> Create(const Tokenizer& tokenizer,
                                               absl::string_view format,
                                               const std::optional<std::string>& model_template);

  // Errors as ChatTemplate::Render reports them, and PrepareToolMessages' kInvalidArgument
  // for a malformed tool call. `extra_context` becomes template variables (e.g. the tools:
  // ToolTemplateContext). A conversation with tool calls or tool results is brought into the
  // template's ToolCallShape first (probing the template: a few renders more).
  absl::StatusOr<RenderedPrompt> Render(const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt,
                                        const json::Object& extra_context) const;
  absl::StatusOr<RenderedPrompt> Render(const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt) const {
    return Render(messages, add_generation_prompt, json::Object());
  }

  // How the format wants an assistant's earlier tool calls (tool_messages.h); renders the
  // template up to four times.
  ToolCallShape tool_call_shape() const { return ProbeToolCallShape(template_); }

  // The built-in format's name ("chatml", "raw", ...), or "model" for the model's template.
  const std::string& format_name() const { return format_name_; }
  PromptFormatSource source() const { return source_; }
  // False for raw, whose text is the user's own.
  bool templated() const { return format_name_ != "raw"; }

 private:
  PromptRenderer(ChatTemplate t, std::string format_name, PromptFormatSource source)
      : template_(std::move(t)), format_name_(std::move(format_name)), source_(source) {}

  ChatTemplate template_;
  std::string format_name_;
  PromptFormatSource source_;
};

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_PROMPT_RENDERER_H_
