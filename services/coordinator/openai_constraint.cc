#include "services/coordinator/openai_constraint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

using json::Value;

constexpr size_t kMaxSchemaNameBytes = 64;  // OpenAI's limit on json_schema.name

using openai::Invalid;
using openai::String;
using openai::WrongType;

// OpenAI's rule for a schema's name: a-z, A-Z, 0-9, '_' and '-', at most 64.
absl::Status CheckSchemaName(absl::string_view field, absl::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxSchemaNameBytes;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-');
  }
  if (!ok) return Invalid(field, "must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-'");
  return absl::OkStatus();
}

// The schema as text, its keys in the request's order (the order properties are generated in).
std::string SchemaText(const Value& schema) {
  json::SerializeOptions compact;
  compact.item_separator = ",";
  compact.key_separator = ":";
  return json::Serialize(schema, compact);
}

}  // namespace

bool OpenAiConstraintParser::IsConstraintField(absl::string_view key) {
  return key == "response_format" || key == "grammar" || key == "regex";
}

absl::Status OpenAiConstraintParser::Field(absl::string_view key, const Value& value) {
  if (key == "response_format") return ResponseFormat(value);
  ASSIGN_OR_RETURN(std::string text, String(key, value));
  if (key == "grammar") {
    if (text.empty()) return Invalid(key, "is empty");
    RETURN_IF_ERROR(Claim(key));
    out_->set_grammar(std::move(text));
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Claim(key));
  out_->set_regex(std::move(text));
  return absl::OkStatus();
}

absl::Status OpenAiConstraintParser::ResponseFormat(const Value& value) {
  if (!value.is_object()) return WrongType("response_format", "an object", value);
  const json::Object& format = value.as_object();
  const Value* type_value = format.Find("type");
  if (type_value == nullptr || type_value->is_null()) {
    return Invalid("response_format", "has no type");
  }
  ASSIGN_OR_RETURN(std::string type, String("response_format.type", *type_value));
  if (type != "text" && type != "json_object" && type != "json_schema") {
    return Invalid("response_format.type",
                   absl::StrCat("'", type, "' is not 'text', 'json_object' or 'json_schema'"));
  }
  for (const auto& [key, v] : format) {
    if (key == "type" || v.is_null()) continue;
    if (key != "json_schema") {
      return Invalid(absl::StrCat("response_format.", key),
                     "unknown field (response_format takes type, json_schema)");
    }
    if (type != "json_schema") {
      return Invalid("response_format.json_schema", "is only for type 'json_schema'");
    }
  }
  if (type == "text") return absl::OkStatus();  // no constraint
  if (type == "json_object") {
    RETURN_IF_ERROR(Claim("response_format"));
    out_->mutable_json_object();
    return absl::OkStatus();
  }
  const Value* schema = format.Find("json_schema");
  if (schema == nullptr || schema->is_null()) {
    return Invalid("response_format.json_schema", "is required with type 'json_schema'");
  }
  return JsonSchema("response_format.json_schema", *schema, false, "response_format");
}

absl::Status OpenAiConstraintParser::FlatFormat(absl::string_view field, const Value& value) {
  if (!value.is_object()) return WrongType(field, "an object", value);
  const Value* type_value = value.as_object().Find("type");
  if (type_value == nullptr || type_value->is_null()) return Invalid(field, "has no type");
  const std::string type_field = absl::StrCat(field, ".type");
  ASSIGN_OR_RETURN(std::string type, String(type_field, *type_value));
  if (type == "json_schema") return JsonSchema(field, value, true, field);
  if (type != "text" && type != "json_object") {
    return Invalid(type_field,
                   absl::StrCat("'", type, "' is not 'text', 'json_object' or 'json_schema'"));
  }
  for (const auto& [key, v] : value.as_object()) {
    if (key != "type" && !v.is_null()) {
      return Invalid(absl::StrCat(field, ".", key),
                     absl::StrCat("unknown field for type '", type, "'"));
    }
  }
  if (type == "text") return absl::OkStatus();
  RETURN_IF_ERROR(Claim(field));
  out_->mutable_json_object();
  return absl::OkStatus();
}

absl::Status OpenAiConstraintParser::JsonSchema(absl::string_view kField, const Value& value,
                                                bool skip_type, absl::string_view claim) {
  if (!value.is_object()) return WrongType(kField, "an object", value);
  const Value* schema = nullptr;
  bool has_name = false;
  for (const auto& [key, v] : value.as_object()) {
    if (v.is_null() || (skip_type && key == "type")) continue;
    const std::string field = absl::StrCat(kField, ".", key);
    if (key == "name") {
      ASSIGN_OR_RETURN(std::string name, String(field, v));
      RETURN_IF_ERROR(CheckSchemaName(field, name));
      has_name = true;
    } else if (key == "schema") {
      if (!v.is_object()) return WrongType(field, "an object", v);
      schema = &v;
    } else if (key == "strict") {
      if (!v.is_bool()) return WrongType(field, "a boolean", v);
    } else if (key == "description") {
      RETURN_IF_ERROR(String(field, v).status());
    } else {
      return Invalid(field, "unknown field (json_schema takes name, schema, strict, description)");
    }
  }
  if (!has_name) return Invalid(absl::StrCat(kField, ".name"), "is required");
  if (schema == nullptr) return Invalid(absl::StrCat(kField, ".schema"), "is required");
  RETURN_IF_ERROR(Claim(claim));
  out_->mutable_json_schema()->set_schema(SchemaText(*schema));
  return absl::OkStatus();
}

absl::Status OpenAiConstraintParser::Claim(absl::string_view field) {
  if (!field_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_, " and ", field,
        ": a request takes at most one constraint (response_format json_object or json_schema, "
        "grammar, regex)"));
  }
  field_ = std::string(field);
  return absl::OkStatus();
}

}  // namespace tandem
