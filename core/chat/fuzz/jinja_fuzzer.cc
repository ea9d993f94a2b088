// libFuzzer target for the chat-template renderer. The input is a template source, optionally
// followed by "\n#--content--\n" and the text of the last user message (any bytes, as a
// request would send). The template is rendered over a conversation with a system prompt,
// tool calls and a tool result, with tools and documents in the context, and tight limits.
// Properties: Create fails only with kInvalidArgument; Render succeeds with at most
// max_output_bytes of output, or fails with kInvalidArgument or kResourceExhausted. Nothing
// may crash, hang (libFuzzer's -timeout) or exhaust memory (-rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "core/chat/chat_template.h"

namespace tandem::chat {
namespace {

constexpr absl::string_view kContentSeparator = "\n#--content--\n";
constexpr size_t kMaxOutputBytes = 1 << 20;

constexpr absl::string_view kConversation = R"([
  {"role": "system", "content": "You are a helpful assistant."},
  {"role": "user", "content": "What is the weather in Zürich? 🌦"},
  {"role": "assistant", "content": "",
   "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]},
  {"role": "tool", "content": "{\"temperature\": 21}", "tool_call_id": "call_1",
   "name": "get_weather"},
  {"role": "assistant", "content": [{"type": "text", "text": "It is 21 °C."}]},
  {"role": "user", "content": "Thanks"}
])";

constexpr absl::string_view kContext = R"({
  "tools": [{"type": "function", "function": {"name": "get_weather",
             "description": "The weather in a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}}],
  "documents": [{"title": "Doc", "text": "Some text"}]
})";

const json::Value& Conversation() {
  static const json::Value* conversation = new json::Value(*json::Parse(kConversation));
  return *conversation;
}

const json::Object& Context() {
  static const json::Object* context = new json::Object(json::Parse(kContext)->as_object());
  return *context;
}

ChatTemplateOptions FuzzOptions() {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.time_zone = absl::UTCTimeZone();
  options.clock = [] { return absl::FromCivil(absl::CivilDay(2024, 7, 26), absl::UTCTimeZone()); };
  options.limits.max_output_bytes = kMaxOutputBytes;
  options.limits.max_call_depth = 32;
  options.limits.max_loop_iterations = 20000;
  options.limits.max_value_bytes = kMaxOutputBytes;
  options.limits.max_computed_bytes = 64 * kMaxOutputBytes;
  return options;
}

void RenderOne(absl::string_view source, const json::Value& messages, bool generation_prompt) {
  absl::StatusOr<ChatTemplate> t = ChatTemplate::Create(source, FuzzOptions());
  if (!t.ok()) {
    TANDEM_FUZZ_ASSERT(t.status().code() == absl::StatusCode::kInvalidArgument, "Create gave %s",
                       t.status().ToString().c_str());
    return;
  }
  absl::StatusOr<std::string> out = t->Render(messages, generation_prompt, Context());
  if (out.ok()) {
    TANDEM_FUZZ_ASSERT(out->size() <= kMaxOutputBytes, "%zu bytes of output", out->size());
    return;
  }
  TANDEM_FUZZ_ASSERT(out.status().code() == absl::StatusCode::kInvalidArgument ||
                         out.status().code() == absl::StatusCode::kResourceExhausted,
                     "Render gave %s", out.status().ToString().c_str());
}

}  // namespace
}  // namespace tandem::chat

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(chat::kContentSeparator);
  json::Value messages = chat::Conversation();
  if (split != absl::string_view::npos) {
    messages.as_array().back().as_object().Set(
        "content", std::string(input.substr(split + chat::kContentSeparator.size())));
  }
  const absl::string_view source = input.substr(0, split);
  chat::RenderOne(source, messages, /*generation_prompt=*/size % 2 == 0);
  return 0;
}
