#include "services/coordinator/openai_tools.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/tool_call_spec.h"
#include "services/coordinator/openai_fields.h"

namespace tandem::openai {
namespace {

using json::Value;

// {"type": "function", "function": {...}}: the "function" member, after checking the type and
// that no other member but `extra` (a call's "id") is set.
absl::StatusOr<const json::Object*> FunctionMember(const std::string& field, const Value& v,
                                                   absl::string_view extra = "") {
  if (!v.is_object()) return WrongType(field, "an object", v);
  const Value* type = v.as_object().Find("type");
  if (type == nullptr) return Invalid(field + ".type", "is required");
  ASSIGN_OR_RETURN(std::string t, String(field + ".type", *type));
  if (t != "function") {
    return Unsupported(field + ".type", absl::StrCat(field, ".type '", t, "'"),
                       " (function tools only)");
  }
  for (const auto& [key, value] : v.as_object()) {
    if (key != "type" && key != "function" && key != extra && !value.is_null()) {
      return Invalid(field + "." + key, "unknown field");
    }
  }
  const Value* function = v.as_object().Find("function");
  if (function == nullptr) return Invalid(field + ".function", "is required");
  if (!function->is_object()) return WrongType(field + ".function", "an object", *function);
  return &function->as_object();
}

absl::Status Tool(const std::string& field, const Value& v, absl::flat_hash_set<std::string>* names,
                  v1::GenerateRequest* request) {
  ASSIGN_OR_RETURN(const json::Object* function, FunctionMember(field, v));
  std::string name;
  std::string description;
  const Value* parameters = nullptr;
  for (const auto& [key, value] : *function) {
    const std::string f = field + ".function." + key;
    if (value.is_null()) continue;
    if (key == "name") {
      ASSIGN_OR_RETURN(name, String(f, value));
    } else if (key == "description") {
      ASSIGN_OR_RETURN(description, String(f, value));
    } else if (key == "parameters") {
      parameters = &value;
    } else if (key == "strict") {
      RETURN_IF_ERROR(Bool(f, value).status());  // forced calls always match the schema
    } else {
      return Invalid(f, "unknown field (a function takes name, description, parameters, strict)");
    }
  }
  return AddTool(field + ".function", std::move(name), std::move(description), parameters,
                 field + ".function.parameters", names, request);
}

absl::Status Tools(const Value& v, v1::GenerateRequest* request) {
  if (!v.is_array()) return WrongType("tools", "an array", v);
  absl::flat_hash_set<std::string> names;
  request->mutable_chat();
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    RETURN_IF_ERROR(Tool(absl::StrCat("tools[", i, "]"), v.as_array()[i], &names, request));
  }
  return absl::OkStatus();
}

absl::Status ToolChoice(const Value& v, v1::GenerateRequest* request) {
  v1::ToolChoice* choice = request->mutable_tool_choice();
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
                                                 "' is not 'none', 'auto', 'required' or "
                                                 "{\"type\": \"function\", ...}"));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const json::Object* function, FunctionMember("tool_choice", v));
  const Value* name = function->Find("name");
  if (name == nullptr) return Invalid("tool_choice.function.name", "is required");
  ASSIGN_OR_RETURN(*choice->mutable_function(), String("tool_choice.function.name", *name));
  choice->set_mode(v1::ToolChoice::MODE_FUNCTION);
  return absl::OkStatus();
}

}  // namespace

absl::Status AddTool(absl::string_view field, std::string name, std::string description,
                     const Value* parameters, absl::string_view parameters_field,
                     absl::flat_hash_set<std::string>* names, v1::GenerateRequest* request) {
  const std::string name_field = absl::StrCat(field, ".name");
  if (name.empty()) return Invalid(name_field, "is required");
  // The one rule for a tool's name, the tool-call grammar's (tool_call_spec.h).
  if (absl::Status valid = CheckToolName(name); !valid.ok()) {
    return Invalid(name_field, valid.message());
  }
  if (!names->insert(name).second) {
    return Invalid(name_field, absl::StrCat("'", name, "' is not unique"));
  }
  v1::Tool* tool = request->mutable_chat()->add_tools();
  if (parameters != nullptr && !parameters->is_null()) {
    if (!parameters->is_object()) return WrongType(parameters_field, "an object", *parameters);
    tool->set_parameters_json(json::Serialize(*parameters));
  }
  tool->set_name(std::move(name));
  tool->set_description(std::move(description));
  return absl::OkStatus();
}

bool IsToolField(absl::string_view key) {
  return key == "tools" || key == "tool_choice" || key == "parallel_tool_calls";
}

absl::Status ToolField(absl::string_view key, const Value& value, v1::GenerateRequest* request) {
  if (key == "tools") return Tools(value, request);
  if (key == "tool_choice") return ToolChoice(value, request);
  ASSIGN_OR_RETURN(bool parallel, Bool(key, value));
  request->set_parallel_tool_calls(parallel);
  return absl::OkStatus();
}

absl::Status MessageToolCalls(absl::string_view field, const Value& value,
                              v1::ChatMessage* message) {
  if (!value.is_array()) return WrongType(field, "an array", value);
  for (size_t i = 0; i < value.as_array().size(); ++i) {
    const std::string f = absl::StrCat(field, "[", i, "]");
    const Value& call = value.as_array()[i];
    ASSIGN_OR_RETURN(const json::Object* function, FunctionMember(f, call, "id"));
    v1::ToolCall* out = message->add_tool_calls();
    if (const Value* id = call.as_object().Find("id"); id != nullptr && !id->is_null()) {
      ASSIGN_OR_RETURN(*out->mutable_id(), String(f + ".id", *id));
    }
    for (const auto& [key, v] : *function) {
      const std::string ff = f + ".function." + key;
      if (key == "name") {
        ASSIGN_OR_RETURN(*out->mutable_name(), String(ff, v));
      } else if (key == "arguments") {
        ASSIGN_OR_RETURN(*out->mutable_arguments(), String(ff, v));
      } else if (!v.is_null()) {
        return Invalid(ff, "unknown field (a call takes name, arguments)");
      }
    }
    if (out->name().empty()) return Invalid(f + ".function.name", "is required");
  }
  return absl::OkStatus();
}

}  // namespace tandem::openai
