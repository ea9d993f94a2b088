#include "core/grammar/json_schema_compilation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

using E = GrammarExpr;

constexpr absl::string_view kAnnotations[] = {
    "title",    "description", "$comment", "$schema",   "default", "examples",
    "deprecated", "readOnly",  "writeOnly", "$defs",    "definitions", "$id"};

// Assertion keywords and the type they imply when `type` is absent (0: none).
struct AssertionKeyword {
  absl::string_view name;
  uint32_t implies;
};
constexpr AssertionKeyword kAssertions[] = {
    {"type", 0}, {"enum", 0}, {"const", 0}, {"anyOf", 0}, {"oneOf", 0}, {"allOf", 0},
    {"$ref", 0},
    {"properties", kTypeObject}, {"required", kTypeObject}, {"additionalProperties", kTypeObject},
    {"items", kTypeArray}, {"prefixItems", kTypeArray}, {"minItems", kTypeArray},
    {"maxItems", kTypeArray},
    {"minLength", kTypeString}, {"maxLength", kTypeString}, {"pattern", kTypeString},
    {"format", kTypeString},
    {"minimum", kTypeNumber}, {"maximum", kTypeNumber}, {"exclusiveMinimum", kTypeNumber},
    {"exclusiveMaximum", kTypeNumber}};

constexpr std::pair<absl::string_view, uint32_t> kTypeNames[] = {
    {"null", kTypeNull},     {"boolean", kTypeBoolean}, {"object", kTypeObject},
    {"array", kTypeArray},   {"string", kTypeString},   {"integer", kTypeInteger},
    {"number", kTypeNumber}};

bool IsAnnotation(absl::string_view key) {
  return std::find(std::begin(kAnnotations), std::end(kAnnotations), key) != std::end(kAnnotations);
}
const AssertionKeyword* FindAssertion(absl::string_view key) {
  for (const AssertionKeyword& k : kAssertions) {
    if (k.name == key) return &k;
  }
  return nullptr;
}

std::string CompactJson(const json::Value& v) {
  json::SerializeOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return json::Serialize(v, options);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// The types a value has (an integral double is an integer, as JSON Schema says).
uint32_t JsonValueTypes(const json::Value& v) {
  switch (v.type()) {
    case json::Value::Type::kNull: return kTypeNull;
    case json::Value::Type::kBool: return kTypeBoolean;
    case json::Value::Type::kInt: return kTypeInteger | kTypeNumber;
    case json::Value::Type::kDouble:
      return std::isfinite(v.as_double()) && std::trunc(v.as_double()) == v.as_double()
                 ? kTypeInteger | kTypeNumber
                 : kTypeNumber;
    case json::Value::Type::kString: return kTypeString;
    case json::Value::Type::kArray: return kTypeArray;
    case json::Value::Type::kObject: return kTypeObject;
  }
  return 0;
}

std::string ChildPointer(absl::string_view pointer, absl::string_view token) {
  std::string out = absl::StrCat(pointer, "/");
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status SchemaError(absl::string_view keyword, absl::string_view pointer,
                         absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("JSON Schema: '", keyword, "' at ", pointer, ": ", what));
}

JsonSchemaCompilation::JsonSchemaCompilation(const json::Value& root, GrammarBuilder& builder,
                                             const JsonSchemaOptions& options,
                                             const GrammarLimits& limits)
    : root_(root),
      builder_(builder),
      options_(options),
      limits_(limits),
      rules_(builder, options.max_whitespace) {}

absl::StatusOr<int32_t> JsonSchemaCompilation::CompileRoot() {
  RETURN_IF_ERROR(CheckNoRefCycle(&root_, "#", "#"));
  const int32_t root = builder_.AddRule("#");
  ref_rules_["#"] = root;
  pending_.push_back({"#", &root_, root});
  while (!pending_.empty()) {
    PendingRef next = std::move(pending_.front());
    pending_.pop_front();
    ASSIGN_OR_RETURN(GrammarExpr body, SchemaExpr(*next.schema, next.pointer, 0));
    RETURN_IF_ERROR(builder_.DefineRule(next.rule, std::move(body)));
    RETURN_IF_ERROR(CheckRuleCount());
  }
  RETURN_IF_ERROR(rules_.status());
  return root;
}

absl::Status JsonSchemaCompilation::CheckRuleCount() const {
  if (builder_.rule_count() > limits_.max_rules) {
    return absl::InvalidArgumentError(absl::StrCat(
        "JSON Schema: the grammar needs more than max_rules=", limits_.max_rules, " rules"));
  }
  return rules_.status();
}

absl::StatusOr<int32_t> JsonSchemaCompilation::SchemaRule(const json::Value& schema,
                                                          const std::string& pointer, int depth) {
  ASSIGN_OR_RETURN(GrammarExpr expr, SchemaExpr(schema, pointer, depth));
  if (expr.kind == GrammarExpr::Kind::kRule) return expr.rule;
  const int32_t id = rules_.AddRule(pointer, std::move(expr));
  RETURN_IF_ERROR(CheckRuleCount());
  return id;
}

absl::Status JsonSchemaCompilation::CheckKeywords(const json::Object& schema,
                                                  const std::string& pointer) const {
  for (const auto& [key, value] : schema) {
    if (key == "$id" && pointer != "#") {
      return SchemaError(key, pointer, "a nested $id (a new base URI for $ref) is not supported");
    }
    if ((key == "$defs" || key == "definitions") && !value.is_object()) {
      return SchemaError(key, pointer, "must be an object of schemas");
    }
    if (IsAnnotation(key) || FindAssertion(key) != nullptr) continue;
    return SchemaError(key, pointer, "the keyword is not supported");
  }
  return absl::OkStatus();
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::SchemaExpr(const json::Value& schema,
                                                              const std::string& pointer,
                                                              int depth) {
  if (depth > options_.max_depth) {
    return SchemaError("schema", pointer,
                       absl::StrCat("nested deeper than max_depth=", options_.max_depth));
  }
  if (schema.is_bool()) {
    if (schema.as_bool()) return rules_.Value();
    return SchemaError("false", pointer, "the schema accepts no value");
  }
  if (!schema.is_object()) {
    return SchemaError("schema", pointer,
                       absl::StrCat("must be an object or a boolean, not ",
                                    json::TypeName(schema.type())));
  }
  const json::Object& object = schema.as_object();
  RETURN_IF_ERROR(CheckKeywords(object, pointer));
  for (absl::string_view combinator : {"$ref", "allOf", "anyOf", "oneOf"}) {
    if (object.Contains(combinator)) return CombinatorExpr(object, combinator, pointer, depth);
  }
  if (object.Contains("enum") || object.Contains("const")) return EnumExpr(object, pointer);
  ASSIGN_OR_RETURN(const uint32_t types, Types(object, pointer));
  std::vector<GrammarExpr> alternatives;
  if (types & kTypeObject) {
    ASSIGN_OR_RETURN(GrammarExpr e, ObjectExpr(object, pointer, depth));
    alternatives.push_back(std::move(e));
  }
  if (types & kTypeArray) {
    ASSIGN_OR_RETURN(GrammarExpr e, ArrayExpr(object, pointer, depth));
    alternatives.push_back(std::move(e));
  }
  if (types & kTypeString) {
    ASSIGN_OR_RETURN(GrammarExpr e, StringExpr(object, pointer));
    alternatives.push_back(std::move(e));
  }
  if (types & (kTypeNumber | kTypeInteger)) {
    ASSIGN_OR_RETURN(GrammarExpr e, NumberExpr(object, pointer, !(types & kTypeNumber)));
    alternatives.push_back(std::move(e));
  }
  if (types & kTypeBoolean) alternatives.push_back(rules_.Boolean());
  if (types & kTypeNull) alternatives.push_back(rules_.Null());
  if (alternatives.size() == 1) return std::move(alternatives[0]);
  return E::Choice(std::move(alternatives));
}

absl::StatusOr<uint32_t> JsonSchemaCompilation::Types(const json::Object& schema,
                                                      const std::string& pointer) const {
  const json::Value* type = schema.Find("type");
  if (type == nullptr) {
    uint32_t implied = 0;
    for (const auto& [key, value] : schema) {
      if (const AssertionKeyword* k = FindAssertion(key)) implied |= k->implies;
    }
    return implied == 0 ? kTypeAll : implied;
  }
  std::vector<const json::Value*> names;
  if (type->is_array()) {
    for (const json::Value& v : type->as_array()) names.push_back(&v);
    if (names.empty()) return SchemaError("type", pointer, "an empty list accepts no value");
  } else {
    names.push_back(type);
  }
  uint32_t types = 0;
  for (const json::Value* name : names) {
    const auto* found = name->is_string()
                            ? std::find_if(std::begin(kTypeNames), std::end(kTypeNames),
                                           [&](const auto& t) { return t.first == name->as_string(); })
                            : std::end(kTypeNames);
    if (found == std::end(kTypeNames)) {
      return SchemaError("type", pointer,
                         absl::StrCat("unknown type ", CompactJson(*name),
                                      " (null, boolean, object, array, string, integer, number)"));
    }
    types |= found->second;
  }
  return types;
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::CombinatorExpr(const json::Object& schema,
                                                                  absl::string_view keyword,
                                                                  const std::string& pointer,
                                                                  int depth) {
  for (const auto& [key, value] : schema) {
    if (key != keyword && FindAssertion(key) != nullptr) {
      return SchemaError(key, pointer,
                         absl::StrCat("beside '", keyword,
                                      "' is not supported (only annotations may sit beside "
                                      "$ref, allOf, anyOf and oneOf)"));
    }
  }
  const json::Value& value = *schema.Find(keyword);
  if (keyword == "$ref") return RefExpr(value, pointer);
  const std::string here = ChildPointer(pointer, keyword);
  if (!value.is_array() || value.as_array().empty()) {
    return SchemaError(keyword, pointer, "must be a non-empty array of schemas");
  }
  const json::Array& list = value.as_array();
  if (list.size() > static_cast<size_t>(options_.max_keyword_entries)) {
    return SchemaError(keyword, pointer,
                       absl::StrCat(list.size(), " schemas, past max_keyword_entries=",
                                    options_.max_keyword_entries));
  }
  if (keyword == "allOf") {
    if (list.size() > 1) {
      return SchemaError(keyword, pointer, "with more than one schema is not supported");
    }
    ASSIGN_OR_RETURN(const int32_t rule, SchemaRule(list[0], ChildPointer(here, "0"), depth + 1));
    return E::Rule(rule);
  }
  std::vector<const json::Value*> branches;
  std::vector<GrammarExpr> alternatives;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_bool() && !list[i].as_bool()) continue;  // false: a branch nothing matches
    branches.push_back(&list[i]);
    ASSIGN_OR_RETURN(const int32_t rule,
                     SchemaRule(list[i], ChildPointer(here, std::to_string(i)), depth + 1));
    alternatives.push_back(E::Rule(rule));
  }
  if (alternatives.empty()) return SchemaError(keyword, pointer, "every branch is false");
  if (keyword == "oneOf") RETURN_IF_ERROR(CheckExclusive(branches, pointer));
  if (alternatives.size() == 1) return std::move(alternatives[0]);
  return E::Choice(std::move(alternatives));
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::EnumExpr(const json::Object& schema,
                                                            const std::string& pointer) {
  for (const auto& [key, value] : schema) {
    if (key != "enum" && key != "const" && key != "type" && FindAssertion(key) != nullptr) {
      return SchemaError(key, pointer, "beside 'enum' or 'const' is not supported");
    }
  }
  const json::Value* enum_values = schema.Find("enum");
  const json::Value* constant = schema.Find("const");
  std::vector<const json::Value*> values;
  if (enum_values != nullptr) {
    if (!enum_values->is_array()) return SchemaError("enum", pointer, "must be an array");
    if (enum_values->as_array().size() > static_cast<size_t>(options_.max_keyword_entries)) {
      return SchemaError("enum", pointer,
                         absl::StrCat(enum_values->as_array().size(),
                                      " values, past max_keyword_entries=",
                                      options_.max_keyword_entries));
    }
    for (const json::Value& v : enum_values->as_array()) {
      if (constant == nullptr || v == *constant) values.push_back(&v);
    }
  } else {
    values.push_back(constant);
  }
  uint32_t types = kTypeAll;
  if (schema.Contains("type")) {
    ASSIGN_OR_RETURN(types, Types(schema, pointer));
  }
  std::vector<GrammarExpr> alternatives;
  absl::flat_hash_set<std::string> seen;
  for (const json::Value* v : values) {
    if ((JsonValueTypes(*v) & types) == 0) continue;
    std::string literal = CompactJson(*v);
    if (seen.insert(literal).second) alternatives.push_back(E::Literal(std::move(literal)));
  }
  const absl::string_view keyword = enum_values != nullptr ? "enum" : "const";
  if (alternatives.empty()) {
    return SchemaError(keyword, pointer, "no value is allowed (with 'type' and 'const')");
  }
  if (alternatives.size() == 1) return std::move(alternatives[0]);
  return E::Choice(std::move(alternatives));
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::RefExpr(const json::Value& ref,
                                                           const std::string& pointer) {
  if (!ref.is_string()) return SchemaError("$ref", pointer, "must be a string");
  std::string target;
  ASSIGN_OR_RETURN(const json::Value* schema, Resolve(ref.as_string(), pointer, &target));
  if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return E::Rule(it->second);
  RETURN_IF_ERROR(CheckNoRefCycle(schema, target, pointer));
  const int32_t rule = builder_.AddRule(target);
  ref_rules_[target] = rule;
  pending_.push_back({target, schema, rule});
  RETURN_IF_ERROR(CheckRuleCount());
  return E::Rule(rule);
}

absl::StatusOr<const json::Value*> JsonSchemaCompilation::Resolve(absl::string_view ref,
                                                                  const std::string& pointer,
                                                                  std::string* target) const {
  const std::string quoted = CompactJson(json::Value(ref));
  if (ref.empty() || ref[0] != '#') {
    return SchemaError("$ref", pointer,
                       absl::StrCat(quoted, " is not a pointer into this document ('#/...')"));
  }
  // The fragment, %XX decoded.
  std::string fragment;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] != '%') {
      fragment += ref[i];
      continue;
    }
    const int hi = i + 2 < ref.size() ? HexValue(ref[i + 1]) : -1;
    const int lo = i + 2 < ref.size() ? HexValue(ref[i + 2]) : -1;
    if (hi < 0 || lo < 0) return SchemaError("$ref", pointer, absl::StrCat(quoted, ": bad %XX"));
    fragment += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (!fragment.empty() && fragment[0] != '/') {
    return SchemaError("$ref", pointer,
                       absl::StrCat(quoted, ": anchors are not supported, only JSON pointers"));
  }
  const json::Value* at = &root_;
  *target = "#";
  size_t start = 1;
  while (start <= fragment.size() && !fragment.empty()) {
    size_t end = fragment.find('/', start);
    if (end == std::string::npos) end = fragment.size();
    std::string token;
    for (size_t i = start; i < end; ++i) {
      if (fragment[i] != '~') {
        token += fragment[i];
      } else if (i + 1 < end && (fragment[i + 1] == '0' || fragment[i + 1] == '1')) {
        token += fragment[++i] == '0' ? '~' : '/';
      } else {
        return SchemaError("$ref", pointer, absl::StrCat(quoted, ": bad ~ escape"));
      }
    }
    const json::Value* next = nullptr;
    if (at->is_object()) {
      next = at->as_object().Find(token);
    } else if (at->is_array() && !token.empty() && token.size() < 10 &&
               std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
               (token == "0" || token[0] != '0')) {
      const size_t index = std::stoul(token);
      if (index < at->as_array().size()) next = &at->as_array()[index];
    }
    if (next == nullptr) return SchemaError("$ref", pointer, absl::StrCat(quoted, " does not resolve"));
    at = next;
    *target = ChildPointer(*target, token);
    start = end + 1;
  }
  return at;
}

// Follows $ref (and single-schema allOf) from `target` while the schema is nothing else; a
// cycle would be a rule that only refers to itself.
absl::Status JsonSchemaCompilation::CheckNoRefCycle(const json::Value* target,
                                                    const std::string& target_pointer,
                                                    const std::string& pointer) const {
  std::vector<std::string> chain = {target_pointer};
  const json::Value* at = target;
  std::string at_pointer = target_pointer;
  while (at->is_object()) {
    const json::Object& object = at->as_object();
    if (const json::Value* all_of = object.Find("allOf");
        all_of != nullptr && all_of->is_array() && all_of->as_array().size() == 1) {
      at = &all_of->as_array()[0];
      at_pointer = ChildPointer(ChildPointer(at_pointer, "allOf"), "0");
      continue;
    }
    const json::Value* ref = object.Find("$ref");
    if (ref == nullptr || !ref->is_string()) break;
    std::string next;
    ASSIGN_OR_RETURN(at, Resolve(ref->as_string(), at_pointer, &next));
    const bool cycle = std::find(chain.begin(), chain.end(), next) != chain.end();
    chain.push_back(next);
    if (cycle) {
      return SchemaError("$ref", pointer,
                         absl::StrCat("the cycle ", absl::StrJoin(chain, " -> "),
                                      " never reaches a schema"));
    }
    at_pointer = next;
  }
  return absl::OkStatus();
}

}  // namespace tandem
