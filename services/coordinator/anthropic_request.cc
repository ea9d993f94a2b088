#include "services/coordinator/anthropic_request.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "services/coordinator/openai_fields.h"
#include "services/coordinator/openai_tools.h"

namespace tandem {
namespace {

using json::Value;
using openai::Bool;
using openai::Float;
using openai::Int;
using openai::Invalid;
using openai::String;
using openai::WrongType;

constexpr int kMaxDepth = 64;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

absl::Status Refused(absl::string_view field, absl::string_view why) {
  return Invalid(field, absl::StrCat("is not supported by Tandem's Anthropic-compatible API", why));
}

// A block's "type" (required).
absl::StatusOr<std::string> BlockType(const std::string& field, const Value& block) {
  if (!block.is_object()) return WrongType(field, "an object", block);
  const Value* type = block.as_object().Find("type");
  if (type == nullptr || type->is_null()) return Invalid(field + ".type", "is required");
  return String(field + ".type", *type);
}

// Checks that `block` has no member but `allowed` (and cache_control, ignored).
absl::Status OnlyMembers(const std::string& field, const Value& block,
                         std::initializer_list<absl::string_view> allowed) {
  for (const auto& [key, value] : block.as_object()) {
    bool ok = key == "type" || key == "cache_control" || value.is_null();
    for (absl::string_view a : allowed) ok = ok || key == a;
    if (!ok) return Refused(field + "." + key, "");
  }
  return absl::OkStatus();
}

// Text: a string, or text blocks joined (system prompts, tool results).
absl::StatusOr<std::string> Text(const std::string& field, const Value& v) {
  if (v.is_string()) return v.as_string();
  if (!v.is_array()) return WrongType(field, "a string or an array of text blocks", v);
  std::string text;
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string f = absl::StrCat(field, "[", i, "]");
    const Value& block = v.as_array()[i];
    ASSIGN_OR_RETURN(std::string type, BlockType(f, block));
    if (type != "text")
      return Refused(f, absl::StrCat(" (a block of type '", type, "'; text only)"));
    RETURN_IF_ERROR(OnlyMembers(f, block, {"text", "citations"}));
    const Value* t = block.as_object().Find("text");
    if (t == nullptr) return Invalid(f + ".text", "is required");
    ASSIGN_OR_RETURN(std::string s, String(f + ".text", *t));
    text += s;
  }
  return text;
}

// An assistant's tool_use block as a call.
absl::Status ToolUse(const std::string& f, const Value& block, v1::ChatMessage* message) {
  RETURN_IF_ERROR(OnlyMembers(f, block, {"id", "name", "input"}));
  const json::Object& o = block.as_object();
  v1::ToolCall* call = message->add_tool_calls();
  const Value* id = o.Find("id");
  const Value* name = o.Find("name");
  const Value* input = o.Find("input");
  if (id == nullptr || id->is_null()) return Invalid(f + ".id", "is required");
  if (name == nullptr || name->is_null()) return Invalid(f + ".name", "is required");
  ASSIGN_OR_RETURN(*call->mutable_id(), String(f + ".id", *id));
  ASSIGN_OR_RETURN(*call->mutable_name(), String(f + ".name", *name));
  if (input == nullptr || input->is_null()) {
    call->set_arguments("{}");
  } else {
    if (!input->is_object()) return WrongType(f + ".input", "an object", *input);
    call->set_arguments(json::Serialize(*input));
  }
  return absl::OkStatus();
}

// A user's tool_result block as a "tool" message.
absl::Status ToolResult(const std::string& f, const Value& block, v1::ChatConversation* chat) {
  RETURN_IF_ERROR(OnlyMembers(f, block, {"tool_use_id", "content", "is_error"}));
  const json::Object& o = block.as_object();
  v1::ChatMessage* tool = chat->add_messages();
  tool->set_role("tool");
  const Value* id = o.Find("tool_use_id");
  if (id == nullptr || id->is_null()) return Invalid(f + ".tool_use_id", "is required");
  ASSIGN_OR_RETURN(*tool->mutable_tool_call_id(), String(f + ".tool_use_id", *id));
  if (const Value* e = o.Find("is_error"); e != nullptr && !e->is_null()) {
    RETURN_IF_ERROR(Bool(f + ".is_error", *e).status());
  }
  if (const Value* c = o.Find("content"); c != nullptr && !c->is_null()) {
    ASSIGN_OR_RETURN(*tool->mutable_content(), Text(f + ".content", *c));
  }
  return absl::OkStatus();
}

// One content block of message `message` (role `role`); tool results go to `chat` first.
absl::Status Block(const std::string& f, const Value& block, const std::string& role,
                   v1::ChatMessage* message, v1::ChatConversation* chat) {
  ASSIGN_OR_RETURN(std::string type, BlockType(f, block));
  if (type == "text") {
    RETURN_IF_ERROR(OnlyMembers(f, block, {"text", "citations"}));
    const Value* t = block.as_object().Find("text");
    if (t == nullptr) return Invalid(f + ".text", "is required");
    ASSIGN_OR_RETURN(std::string s, String(f + ".text", *t));
    message->mutable_content()->append(s);
    return absl::OkStatus();
  }
  if (type == "tool_use" && role == "assistant") return ToolUse(f, block, message);
  if (type == "tool_result" && role == "user") return ToolResult(f, block, chat);
  if ((type == "thinking" || type == "redacted_thinking") && role == "assistant") {
    return absl::OkStatus();  // earlier reasoning: templates drop it too
  }
  return Refused(f, absl::StrCat(" (a ", role, " block of type '", type, "')"));
}

absl::Status Message(size_t index, const Value& v, v1::ChatConversation* chat) {
  const std::string field = absl::StrCat("messages[", index, "]");
  if (!v.is_object()) return WrongType(field, "an object", v);
  const Value* role_value = v.as_object().Find("role");
  const Value* content = v.as_object().Find("content");
  if (role_value == nullptr || role_value->is_null())
    return Invalid(field + ".role", "is required");
  ASSIGN_OR_RETURN(std::string role, String(field + ".role", *role_value));
  if (role != "user" && role != "assistant") {
    return Invalid(field + ".role", absl::StrCat("'", role, "' is not 'user' or 'assistant'"));
  }
  for (const auto& [key, value] : v.as_object()) {
    if (key != "role" && key != "content" && !value.is_null()) {
      return Refused(absl::StrCat(field, ".", key), "");
    }
  }
  if (content == nullptr || content->is_null()) return Invalid(field + ".content", "is required");
  v1::ChatMessage message;
  message.set_role(role);
  if (content->is_string()) {
    message.set_content(content->as_string());
  } else if (content->is_array()) {
    for (size_t i = 0; i < content->as_array().size(); ++i) {
      RETURN_IF_ERROR(Block(absl::StrCat(field, ".content[", i, "]"), content->as_array()[i], role,
                            &message, chat));
    }
  } else {
    return WrongType(field + ".content", "a string or an array of content blocks", *content);
  }
  // A user turn of tool results only is the tool messages alone.
  const bool only_results =
      content->is_array() && !content->as_array().empty() && message.content().empty() &&
      role == "user" && chat->messages_size() > 0 && chat->messages().rbegin()->role() == "tool";
  if (!only_results) *chat->add_messages() = std::move(message);
  return absl::OkStatus();
}

absl::Status Messages(const Value& v, v1::GenerateRequest* g) {
  if (!v.is_array()) return WrongType("messages", "an array", v);
  if (v.as_array().empty()) return Invalid("messages", "is empty");
  v1::ChatConversation* chat = g->mutable_chat();
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    RETURN_IF_ERROR(Message(i, v.as_array()[i], chat));
  }
  return absl::OkStatus();
}

absl::Status Tools(const Value& v, v1::GenerateRequest* g) {
  if (!v.is_array()) return WrongType("tools", "an array", v);
  absl::flat_hash_set<std::string> names;
  g->mutable_chat();
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string f = absl::StrCat("tools[", i, "]");
    const Value& tool = v.as_array()[i];
    if (!tool.is_object()) return WrongType(f, "an object", tool);
    std::string name;
    std::string description;
    const Value* schema = nullptr;
    for (const auto& [key, value] : tool.as_object()) {
      const std::string kf = f + "." + key;
      if (value.is_null() || key == "cache_control") continue;
      if (key == "name") {
        ASSIGN_OR_RETURN(name, String(kf, value));
      } else if (key == "description") {
        ASSIGN_OR_RETURN(description, String(kf, value));
      } else if (key == "input_schema") {
        schema = &value;
      } else if (key == "type") {
        ASSIGN_OR_RETURN(std::string type, String(kf, value));
        if (type != "custom") {
          return Refused(kf, absl::StrCat(" (tool type '", type, "'; client tools only)"));
        }
      } else {
        return Refused(kf, "");
      }
    }
    if (schema == nullptr) return Invalid(f + ".input_schema", "is required");
    RETURN_IF_ERROR(openai::AddTool(f, std::move(name), std::move(description), schema,
                                    f + ".input_schema", &names, g));
  }
  return absl::OkStatus();
}

absl::Status ToolChoice(const Value& v, v1::GenerateRequest* g) {
  ASSIGN_OR_RETURN(std::string type, BlockType("tool_choice", v));
  v1::ToolChoice* choice = g->mutable_tool_choice();
  for (const auto& [key, value] : v.as_object()) {
    if (value.is_null() || key == "type") continue;
    if (key == "disable_parallel_tool_use") {
      ASSIGN_OR_RETURN(bool disable, Bool("tool_choice." + key, value));
      g->set_parallel_tool_calls(!disable);
    } else if (key == "name" && type == "tool") {
      ASSIGN_OR_RETURN(*choice->mutable_function(), String("tool_choice.name", value));
    } else {
      return Refused("tool_choice." + key, "");
    }
  }
  if (type == "auto") {
    choice->set_mode(v1::ToolChoice::MODE_AUTO);
  } else if (type == "any") {
    choice->set_mode(v1::ToolChoice::MODE_REQUIRED);
  } else if (type == "none") {
    choice->set_mode(v1::ToolChoice::MODE_NONE);
  } else if (type == "tool") {
    if (choice->function().empty()) return Invalid("tool_choice.name", "is required");
    choice->set_mode(v1::ToolChoice::MODE_FUNCTION);
  } else {
    return Invalid("tool_choice.type",
                   absl::StrCat("'", type, "' is not 'auto', 'any', 'tool' or 'none'"));
  }
  return absl::OkStatus();
}

absl::Status StopSequences(const Value& v, v1::GenerateRequest* g) {
  if (!v.is_array()) return WrongType("stop_sequences", "an array of strings", v);
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string f = absl::StrCat("stop_sequences[", i, "]");
    ASSIGN_OR_RETURN(std::string s, String(f, v.as_array()[i]));
    if (s.empty()) return Invalid(f, "is empty");
    g->add_stop_strings(std::move(s));
  }
  return absl::OkStatus();
}

// The generation fields (not for count_tokens); kNotFound when `key` is none.
absl::Status GenerationField(const std::string& key, const Value& v, AnthropicRequest& r) {
  if (key == "max_tokens") {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, 1, kInt32Max));
    r.generate.set_max_tokens(static_cast<int32_t>(n));
  } else if (key == "stream") {
    ASSIGN_OR_RETURN(r.stream, Bool(key, v));
  } else if (key == "stop_sequences") {
    return StopSequences(v, &r.generate);
  } else if (key == "temperature") {
    ASSIGN_OR_RETURN(float f, Float(key, v));
    r.generate.mutable_sampling()->set_temperature(f);
  } else if (key == "top_p") {
    ASSIGN_OR_RETURN(float f, Float(key, v));
    r.generate.mutable_sampling()->set_top_p(f);
  } else if (key == "top_k") {
    ASSIGN_OR_RETURN(int64_t k, Int(key, v, 0, kInt32Max));
    r.generate.mutable_sampling()->set_top_k(static_cast<int32_t>(k));
  } else if (key == "metadata" || key == "service_tier") {
    return absl::OkStatus();  // nothing changes here
  } else {
    return absl::NotFoundError(key);
  }
  return absl::OkStatus();
}

absl::Status Field(const std::string& key, const Value& v, AnthropicEndpoint endpoint,
                   AnthropicRequest& r) {
  if (key == "model") {
    ASSIGN_OR_RETURN(r.model, String(key, v));
    return absl::OkStatus();
  }
  if (key == "messages") return Messages(v, &r.generate);
  if (key == "system") return absl::OkStatus();  // read first, by ParseAnthropicRequest
  if (key == "tools") return Tools(v, &r.generate);
  if (key == "tool_choice") return ToolChoice(v, &r.generate);
  absl::Status status = absl::NotFoundError(key);
  if (endpoint == AnthropicEndpoint::kMessages) status = GenerationField(key, v, r);
  if (absl::IsNotFound(status)) return Refused(key, "");
  return status;
}

}  // namespace

absl::StatusOr<AnthropicRequest> ParseAnthropicRequest(absl::string_view body,
                                                       AnthropicEndpoint endpoint) {
  json::ParseOptions options;
  options.max_depth = kMaxDepth;
  absl::StatusOr<Value> parsed = json::Parse(body, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_object()) return WrongType("the body", "a JSON object", *parsed);
  AnthropicRequest r;
  v1::ChatConversation* chat = r.generate.mutable_chat();
  chat->set_add_generation_prompt(true);
  // The system prompt opens the conversation, wherever it stands in the body.
  if (const Value* system = parsed->as_object().Find("system");
      system != nullptr && !system->is_null()) {
    v1::ChatMessage* message = chat->add_messages();
    message->set_role("system");
    ASSIGN_OR_RETURN(*message->mutable_content(), Text("system", *system));
  }
  for (const auto& [key, value] : parsed->as_object()) {
    if (value.is_null()) continue;
    RETURN_IF_ERROR(Field(key, value, endpoint, r));
  }
  if (r.model.empty()) return Invalid("model", "is required");
  if (const Value* m = parsed->as_object().Find("messages"); m == nullptr || m->is_null()) {
    return Invalid("messages", "is required");
  }
  if (endpoint == AnthropicEndpoint::kMessages && r.generate.max_tokens() == 0) {
    return Invalid("max_tokens", "is required");
  }
  return r;
}

}  // namespace tandem
