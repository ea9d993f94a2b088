#include "core/chat/tool_messages.h"

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"

namespace tandem::chat {
namespace {

constexpr absl::string_view kProbeArguments = R"({"probe_argument": "probe_value"})";
constexpr absl::string_view kProbeId = "probe0001";  // 9 characters, as Mistral requires

// The probe conversation: a question, a call in `shape`, its result.
std::vector<ChatMessage> ProbeConversation(const ToolCallShape& shape) {
  json::Value arguments = shape.object_arguments
                              ? json::Value(json::Object{{"probe_argument", "probe_value"}})
                              : json::Value(kProbeArguments);
  json::Object call{
      {"id", kProbeId},
      {"type", "function"},
      {"function", json::Object{{"name", "probe_function"}, {"arguments", std::move(arguments)}}}};
  return {
      {"user", json::Value("probe question"), {}},
      {"assistant", shape.empty_content ? json::Value("") : json::Value(),
       json::Object{{"tool_calls", json::Array{std::move(call)}}}},
      {"tool", json::Value("probe result"), json::Object{{"tool_call_id", kProbeId}}},
  };
}

json::Array ProbeTools() {
  json::Object parameters{
      {"type", "object"},
      {"properties",
       json::Object{{"probe_argument",
                     json::Object{{"type", "string"}, {"description", "probe argument"}}}}},
      {"required", json::Array{"probe_argument"}}};
  return {json::Object{{"type", "function"},
                       {"function", json::Object{{"name", "probe_function"},
                                                 {"description", "probe function"},
                                                 {"parameters", std::move(parameters)}}}}};
}

bool RendersShape(const ChatTemplate& t, const ToolCallShape& shape) {
  const absl::StatusOr<std::string> out =
      t.Render(ProbeConversation(shape), /*add_generation_prompt=*/false,
               ToolTemplateContext(ProbeTools(), absl::UnixEpoch()));
  if (!out.ok()) return false;
  // The arguments as JSON (or as a Python dict's repr), not escaped inside a JSON string; no
  // stringified null (the probe has no "None" of its own).
  return (absl::StrContains(*out, R"("probe_argument": "probe_value")") ||
          absl::StrContains(*out, "'probe_argument': 'probe_value'")) &&
         !absl::StrContains(*out, "None");
}

absl::Status FieldError(size_t message, absl::string_view field, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("messages[", message, "].", field, ": expected ", expected));
}

// Checks and converts one tool call (`where`: "tool_calls[i]").
absl::Status PrepareCall(const ToolCallShape& shape, size_t message, const std::string& where,
                         json::Value* call) {
  if (!call->is_object()) return FieldError(message, where, "an object");
  json::Object& object = call->as_object();
  const json::Value* id = object.Find("id");
  if (id != nullptr && !id->is_string()) return FieldError(message, where + ".id", "a string");
  json::Value& type = object["type"];
  if (type.is_null()) type = "function";
  if (!type.is_string() || type.as_string() != "function") {
    return FieldError(message, where + ".type", "\"function\"");
  }
  json::Value* function = object.Find("function");
  if (function == nullptr || !function->is_object()) {
    return FieldError(message, where + ".function", "an object with name and arguments");
  }
  const json::Value* name = function->as_object().Find("name");
  if (name == nullptr || !name->is_string() || name->as_string().empty()) {
    return FieldError(message, where + ".function.name", "a non-empty string");
  }
  json::Value* arguments = function->as_object().Find("arguments");
  if (arguments == nullptr || !(arguments->is_string() || arguments->is_object())) {
    return FieldError(message, where + ".function.arguments", "a JSON string or object");
  }
  if (shape.object_arguments && arguments->is_string()) {
    absl::StatusOr<json::Value> parsed = json::Parse(arguments->as_string());
    if (parsed.ok() && parsed->is_object()) *arguments = *std::move(parsed);
  } else if (!shape.object_arguments && arguments->is_object()) {
    *arguments = json::Serialize(*arguments);
  }
  return absl::OkStatus();
}

// Checks and converts one message's tool_calls (and its content).
absl::Status PrepareMessage(const ToolCallShape& shape, size_t index, ChatMessage* message) {
  const json::Value* tool_call_id = message->extra.Find("tool_call_id");
  if (tool_call_id != nullptr && !tool_call_id->is_string()) {
    return FieldError(index, "tool_call_id", "a string");
  }
  json::Value* calls = message->extra.Find("tool_calls");
  if (calls == nullptr) return absl::OkStatus();
  if (calls->is_null() || (calls->is_array() && calls->as_array().empty())) {
    message->extra.Erase("tool_calls");
    return absl::OkStatus();
  }
  if (message->role != "assistant") {
    return absl::InvalidArgumentError(
        absl::StrCat("messages[", index, "].tool_calls: only assistant messages make tool calls"));
  }
  if (!calls->is_array()) return FieldError(index, "tool_calls", "an array of tool calls");
  json::Array& array = calls->as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    RETURN_IF_ERROR(PrepareCall(shape, index, absl::StrCat("tool_calls[", i, "]"), &array[i]));
  }
  if (shape.empty_content && message->content.is_null()) message->content = "";
  return absl::OkStatus();
}

}  // namespace

ToolCallShape ProbeToolCallShape(const ChatTemplate& t) {
  for (bool object_arguments : {false, true}) {
    for (bool empty_content : {false, true}) {
      const ToolCallShape shape{object_arguments, empty_content};
      if (RendersShape(t, shape)) return shape;
    }
  }
  return ToolCallShape{};
}

bool HasToolMessages(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    if (m.role == "tool" || m.extra.Contains("tool_calls")) return true;
  }
  return false;
}

absl::Status PrepareToolMessages(const ToolCallShape& shape, std::vector<ChatMessage>* messages) {
  for (size_t i = 0; i < messages->size(); ++i) {
    RETURN_IF_ERROR(PrepareMessage(shape, i, &(*messages)[i]));
  }
  return absl::OkStatus();
}

json::Object ToolTemplateContext(const json::Array& tools, absl::Time now) {
  json::Object context;
  json::SerializeOptions indented;
  indented.indent = 2;
  if (!tools.empty()) context.Set("tools", tools);
  context.Set("functions", tools.empty() ? std::string() : json::Serialize(tools, indented));
  context.Set("datetime", absl::FormatTime("%b %d %Y %H:%M:%S GMT", now, absl::UTCTimeZone()));
  return context;
}

}  // namespace tandem::chat
