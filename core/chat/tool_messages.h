// OpenAI-shaped tool conversations, made ready for a model's chat template.
//
// OpenAI sends `tools` as [{"type": "function", "function": {"name", "description",
// "parameters"}}], which is what templates read. But an assistant's earlier calls arrive as
// tool_calls[i].function.arguments holding a JSON *string*, and null content; templates
// disagree on what they want there:
//   - arguments as an object: Llama 3.1/3.2/3.3 and Qwen2.5 `tojson` them, Mistral-Nemo
//     `tojson`s the whole function, Command-R+ `tojson(indent=4)`s them (a string would come
//     out escaped);
//   - arguments as the JSON text: functionary v3.1/v3.2, firefunction-v2 and the DeepSeek-R1
//     templates concatenate them with strings (an object is an error); Hermes takes either;
//   - content: DeepSeek-R1 renders the calls only when it `is none`; Command-R+ prints a null
//     content as "None" and wants "" (or none at all); the rest ignore it or test it for truth.
// So the shape a template wants is found by rendering a probe conversation
// (ProbeToolCallShape), and PrepareToolMessages converts the messages to it.
//
// `role: "tool"` messages (tool_call_id, content) pass through as they are.
//
// Thread-safe (no state).
#ifndef TANDEM_CORE_CHAT_TOOL_MESSAGES_H_
#define TANDEM_CORE_CHAT_TOOL_MESSAGES_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/base/json.h"
#include "core/chat/chat_template.h"

namespace tandem::chat {

// How a template wants an assistant message's tool calls. The default is what a template
// that renders no calls at all gets: objects, and content "" rather than "None".
struct ToolCallShape {
  // function.arguments as the parsed JSON object; false: as JSON text.
  bool object_arguments = true;
  // A null content of an assistant message with tool calls becomes ""; false: stays null.
  bool empty_content = true;

  friend bool operator==(const ToolCallShape& a, const ToolCallShape& b) {
    return a.object_arguments == b.object_arguments && a.empty_content == b.empty_content;
  }
};

// The first shape, of (text, null), (text, ""), (object, null), (object, ""), in which `t`
// renders a probe call's arguments as JSON (not escaped inside a string) with no "None"
// where the content was; the default shape when none does. Renders `t` at most four times.
ToolCallShape ProbeToolCallShape(const ChatTemplate& t);

// Whether any message has tool_calls or the role "tool" (PrepareToolMessages has work).
bool HasToolMessages(const std::vector<ChatMessage>& messages);

// Checks every message's tool_calls and converts them to `shape`:
//  - a null or empty tool_calls is removed (Llama 3.1 takes its mere presence for a call);
//  - tool_calls only on assistant messages; each an object with an optional string `id`,
//    `type` "function" (added when missing: DeepSeek-R1 prints it) and `function` an object
//    with a non-empty string `name` and `arguments` a string or an object;
//  - arguments: with object_arguments, a string that parses as a JSON object becomes that
//    object (any other string stays as it is); without, an object becomes its JSON text;
//  - a null content of a message with tool calls becomes "" when shape.empty_content;
//  - a tool message's tool_call_id, if present, must be a string.
// kInvalidArgument naming the message and the field, e.g. "messages[1].tool_calls[0].function
// .name: expected a non-empty string". Idempotent.
absl::Status PrepareToolMessages(const ToolCallShape& shape, std::vector<ChatMessage>* messages);

// The template variables a request's tools are passed in (ChatTemplate::Render's
// extra_context): "tools" (left out when there are none: Llama 3.1 takes even an empty list
// for "tools offered"), and firefunction-v2's own "functions" (the tools as JSON text indented
// by 2, "" when there are none) and "datetime" (`now` as "Jul 26 2024 13:00:00 GMT"), which it
// reads even in a plain chat. Pass it on every render.
json::Object ToolTemplateContext(const json::Array& tools, absl::Time now);

}  // namespace tandem::chat

#endif  // TANDEM_CORE_CHAT_TOOL_MESSAGES_H_
