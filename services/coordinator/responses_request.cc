#include "services/coordinator/responses_request.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "services/coordinator/openai_constraint.h"
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
using openai::Unsupported;
using openai::WrongType;

constexpr int kMaxDepth = 64;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A member of `o` that is set (not absent, not null).
const Value* Member(const json::Object& o, absl::string_view key) {
  const Value* v = o.Find(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

absl::StatusOr<std::string> RequiredString(const std::string& field, const json::Object& o,
                                           absl::string_view key) {
  const Value* v = Member(o, key);
  if (v == nullptr) return Invalid(absl::StrCat(field, ".", key), "is required");
  return String(absl::StrCat(field, ".", key), *v);
}

// Refuses a member of `o` outside `allowed` ("type", "id" and "status" always allowed: SDKs
// send back the items they received).
absl::Status OnlyMembers(const std::string& field, const json::Object& o,
                         std::initializer_list<absl::string_view> allowed) {
  for (const auto& [key, value] : o) {
    bool ok = key == "type" || key == "id" || key == "status" || value.is_null();
    for (absl::string_view a : allowed) ok = ok || key == a;
    if (!ok) return Unsupported(absl::StrCat(field, ".", key), absl::StrCat(field, ".", key), "");
  }
  return absl::OkStatus();
}

// A message's content: a string, or input_text / output_text parts joined.
absl::StatusOr<std::string> Content(const std::string& field, const Value& v) {
  if (v.is_string()) return v.as_string();
  if (!v.is_array()) return WrongType(field, "a string or an array of content parts", v);
  std::string text;
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string f = absl::StrCat(field, "[", i, "]");
    const Value& part = v.as_array()[i];
    if (!part.is_object()) return WrongType(f, "an object", part);
    ASSIGN_OR_RETURN(std::string type, RequiredString(f, part.as_object(), "type"));
    if (type != "input_text" && type != "output_text") {
      return Unsupported(f, absl::StrCat(f, " of type '", type, "'"), " (text only)");
    }
    RETURN_IF_ERROR(OnlyMembers(f, part.as_object(), {"text", "annotations", "logprobs"}));
    ASSIGN_OR_RETURN(std::string s, RequiredString(f, part.as_object(), "text"));
    text += s;
  }
  return text;
}

absl::Status MessageItem(const std::string& f, const json::Object& item,
                         v1::ChatConversation* chat) {
  RETURN_IF_ERROR(OnlyMembers(f, item, {"role", "content"}));
  ASSIGN_OR_RETURN(std::string role, RequiredString(f, item, "role"));
  if (role == "developer") role = "system";
  if (role != "user" && role != "assistant" && role != "system") {
    return Invalid(
        f + ".role",
        absl::StrCat("'", role, "' is not 'user', 'assistant', 'system' or 'developer'"));
  }
  const Value* content = Member(item, "content");
  if (content == nullptr) return Invalid(f + ".content", "is required");
  v1::ChatMessage* message = chat->add_messages();
  message->set_role(role);
  ASSIGN_OR_RETURN(*message->mutable_content(), Content(f + ".content", *content));
  return absl::OkStatus();
}

absl::Status FunctionCallItem(const std::string& f, const json::Object& item,
                              v1::ChatConversation* chat) {
  RETURN_IF_ERROR(OnlyMembers(f, item, {"call_id", "name", "arguments"}));
  // Calls after the assistant's text or other calls are that assistant turn's.
  const bool joins =
      chat->messages_size() > 0 && chat->messages().rbegin()->role() == "assistant";
  v1::ChatMessage* turn =
      joins ? chat->mutable_messages(chat->messages_size() - 1) : chat->add_messages();
  turn->set_role("assistant");
  v1::ToolCall* call = turn->add_tool_calls();
  ASSIGN_OR_RETURN(*call->mutable_id(), RequiredString(f, item, "call_id"));
  ASSIGN_OR_RETURN(*call->mutable_name(), RequiredString(f, item, "name"));
  ASSIGN_OR_RETURN(*call->mutable_arguments(), RequiredString(f, item, "arguments"));
  return absl::OkStatus();
}

absl::Status FunctionCallOutputItem(const std::string& f, const json::Object& item,
                                    v1::ChatConversation* chat) {
  RETURN_IF_ERROR(OnlyMembers(f, item, {"call_id", "output"}));
  v1::ChatMessage* tool = chat->add_messages();
  tool->set_role("tool");
  ASSIGN_OR_RETURN(*tool->mutable_tool_call_id(), RequiredString(f, item, "call_id"));
  const Value* output = Member(item, "output");
  if (output == nullptr) return Invalid(f + ".output", "is required");
  ASSIGN_OR_RETURN(*tool->mutable_content(), Content(f + ".output", *output));
  return absl::OkStatus();
}

absl::Status Item(size_t index, const Value& v, v1::ChatConversation* chat) {
  const std::string f = absl::StrCat("input[", index, "]");
  if (!v.is_object()) return WrongType(f, "an object", v);
  const json::Object& item = v.as_object();
  std::string type = "message";
  if (const Value* t = Member(item, "type"); t != nullptr) {
    ASSIGN_OR_RETURN(type, String(f + ".type", *t));
  }
  if (type == "message") return MessageItem(f, item, chat);
  if (type == "function_call") return FunctionCallItem(f, item, chat);
  if (type == "function_call_output") return FunctionCallOutputItem(f, item, chat);
  if (type == "reasoning") return absl::OkStatus();  // earlier reasoning: templates drop it
  return Unsupported(f + ".type", absl::StrCat(f, " of type '", type, "'"),
                     " (message, function_call, function_call_output, reasoning)");
}

absl::Status Input(const Value& v, v1::ChatConversation* chat) {
  if (v.is_string()) {
    v1::ChatMessage* message = chat->add_messages();
    message->set_role("user");
    message->set_content(v.as_string());
    return absl::OkStatus();
  }
  if (!v.is_array()) return WrongType("input", "a string or an array of items", v);
  if (v.as_array().empty()) return Invalid("input", "is empty");
  for (size_t i = 0; i < v.as_array().size(); ++i) RETURN_IF_ERROR(Item(i, v.as_array()[i], chat));
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
    ASSIGN_OR_RETURN(std::string type, RequiredString(f, tool.as_object(), "type"));
    if (type != "function") {
      return Unsupported(f + ".type", absl::StrCat("the built-in tool '", type, "'"),
                         " (function tools only)");
    }
    RETURN_IF_ERROR(
        OnlyMembers(f, tool.as_object(), {"name", "description", "parameters", "strict"}));
    std::string description;
    if (const Value* d = Member(tool.as_object(), "description"); d != nullptr) {
      ASSIGN_OR_RETURN(description, String(f + ".description", *d));
    }
    if (const Value* s = Member(tool.as_object(), "strict"); s != nullptr) {
      RETURN_IF_ERROR(Bool(f + ".strict", *s).status());
    }
    std::string name;
    if (const Value* n = Member(tool.as_object(), "name"); n != nullptr) {
      ASSIGN_OR_RETURN(name, String(f + ".name", *n));
    }
    RETURN_IF_ERROR(openai::AddTool(f, std::move(name), std::move(description),
                                    Member(tool.as_object(), "parameters"), f + ".parameters",
                                    &names, g));
  }
  return absl::OkStatus();
}

absl::Status ToolChoice(const Value& v, v1::GenerateRequest* g) {
  v1::ToolChoice* choice = g->mutable_tool_choice();
  if (v.is_string()) {
    const std::string& mode = v.as_string();
    if (mode == "none") {
      choice->set_mode(v1::ToolChoice::MODE_NONE);
    } else if (mode == "auto") {
      choice->set_mode(v1::ToolChoice::MODE_AUTO);
    } else if (mode == "required") {
      choice->set_mode(v1::ToolChoice::MODE_REQUIRED);
    } else {
      return Invalid("tool_choice", absl::StrCat("'", mode,
                                                 "' is not 'none', 'auto', 'required' "
                                                 "or {\"type\": \"function\", ...}"));
    }
    return absl::OkStatus();
  }
  if (!v.is_object()) return WrongType("tool_choice", "a string or an object", v);
  ASSIGN_OR_RETURN(std::string type, RequiredString("tool_choice", v.as_object(), "type"));
  if (type != "function") {
    return Unsupported("tool_choice.type", absl::StrCat("tool_choice.type '", type, "'"),
                       " (function tools only)");
  }
  RETURN_IF_ERROR(OnlyMembers("tool_choice", v.as_object(), {"name"}));
  ASSIGN_OR_RETURN(*choice->mutable_function(),
                   RequiredString("tool_choice", v.as_object(), "name"));
  choice->set_mode(v1::ToolChoice::MODE_FUNCTION);
  return absl::OkStatus();
}

absl::Status Text(const Value& v, OpenAiConstraintParser& constraint, ResponsesRequest& r) {
  if (!v.is_object()) return WrongType("text", "an object", v);
  for (const auto& [key, value] : v.as_object()) {
    if (value.is_null()) continue;
    if (key == "format") {
      RETURN_IF_ERROR(constraint.FlatFormat("text.format", value));
      r.text_format = value;
    } else if (key == "verbosity") {
      ASSIGN_OR_RETURN(std::string verbosity, String("text.verbosity", value));
      if (verbosity != "medium")
        return Unsupported("text.verbosity", "text.verbosity other than 'medium'", "");
    } else {
      return Unsupported("text." + key, "text." + key, "");
    }
  }
  return absl::OkStatus();
}

// Fields accepted at their stateless or neutral value only; kNotFound for another key.
absl::Status NeutralField(const std::string& key, const Value& v) {
  if (key == "store" || key == "background") {
    ASSIGN_OR_RETURN(bool b, Bool(key, v));
    if (b) {
      return Unsupported(key, absl::StrCat(key, " = true"),
                         key == "store" ? " (nothing is stored: send store false)"
                                        : " (no background mode: send stream or wait)");
    }
  } else if (key == "truncation") {
    ASSIGN_OR_RETURN(std::string t, String(key, v));
    if (t != "disabled") return Unsupported(key, "truncation other than 'disabled'", "");
  } else if (key == "top_logprobs") {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, 0, 20));
    if (n != 0) return Unsupported(key, "top_logprobs other than 0", "");
  } else if (key == "include") {
    if (!v.is_array()) return WrongType(key, "an array", v);
    if (!v.as_array().empty()) return Unsupported(key, "a non-empty include", "");
  } else if (key == "previous_response_id" || key == "conversation") {
    return Unsupported(key, key,
                       " (a stateless server stores no response or conversation: send "
                       "the whole input each time)");
  } else if (key == "user" || key == "service_tier" || key == "safety_identifier" ||
             key == "prompt_cache_key") {
    return absl::OkStatus();  // nothing changes here
  } else {
    return absl::NotFoundError(key);
  }
  return absl::OkStatus();
}

absl::Status Field(const std::string& key, const Value& v, OpenAiConstraintParser& constraint,
                   ResponsesRequest& r) {
  if (key == "model") {
    ASSIGN_OR_RETURN(r.model, String(key, v));
  } else if (key == "input") {
    return Input(v, r.generate.mutable_chat());
  } else if (key == "instructions") {
    return absl::OkStatus();  // read first, by ParseResponsesRequest
  } else if (key == "max_output_tokens") {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, 1, kInt32Max));
    r.generate.set_max_tokens(static_cast<int32_t>(n));
    r.max_output_tokens = v;
  } else if (key == "temperature" || key == "top_p") {
    ASSIGN_OR_RETURN(float f, Float(key, v));
    key == "temperature" ? r.generate.mutable_sampling()->set_temperature(f)
                         : r.generate.mutable_sampling()->set_top_p(f);
    (key == "temperature" ? r.temperature : r.top_p) = v;
  } else if (key == "stream") {
    ASSIGN_OR_RETURN(r.stream, Bool(key, v));
  } else if (key == "text") {
    return Text(v, constraint, r);
  } else if (key == "tools") {
    r.tools = v;
    return Tools(v, &r.generate);
  } else if (key == "tool_choice") {
    r.tool_choice = v;
    return ToolChoice(v, &r.generate);
  } else if (key == "parallel_tool_calls") {
    ASSIGN_OR_RETURN(bool b, Bool(key, v));
    r.generate.set_parallel_tool_calls(b);
  } else if (key == "metadata") {
    if (!v.is_object()) return WrongType(key, "an object", v);
    r.metadata = v;
  } else {
    absl::Status neutral = NeutralField(key, v);
    if (absl::IsNotFound(neutral)) return Unsupported(key, absl::StrCat("field '", key, "'"), "");
    return neutral;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(absl::string_view body) {
  json::ParseOptions options;
  options.max_depth = kMaxDepth;
  absl::StatusOr<Value> parsed = json::Parse(body, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_object()) return WrongType("the body", "a JSON object", *parsed);
  ResponsesRequest r;
  v1::ChatConversation* chat = r.generate.mutable_chat();
  chat->set_add_generation_prompt(true);
  // The instructions open the conversation, wherever they stand in the body.
  if (const Value* i = Member(parsed->as_object(), "instructions"); i != nullptr) {
    v1::ChatMessage* message = chat->add_messages();
    message->set_role("system");
    ASSIGN_OR_RETURN(*message->mutable_content(), String("instructions", *i));
    r.instructions = *i;
  }
  OpenAiConstraintParser constraint(r.generate.mutable_constraint());
  for (const auto& [key, value] : parsed->as_object()) {
    if (value.is_null()) continue;
    RETURN_IF_ERROR(Field(key, value, constraint, r));
  }
  if (r.model.empty()) return Invalid("model", "is required");
  if (Member(parsed->as_object(), "input") == nullptr) return Invalid("input", "is required");
  if (r.generate.constraint().kind_case() == v1::Constraint::KIND_NOT_SET) {
    r.generate.clear_constraint();
  }
  return r;
}

}  // namespace tandem
