// oneOf for the JSON Schema compiler (json_schema_compilation.h). The grammar of a oneOf is
// its branches' choice, which says "at least one"; it means "exactly one" only when no value
// can match two branches. That is proved here conservatively, pair by pair: the branches'
// declared types are disjoint, or their const/enum values are, or both require a property
// whose const/enum values are disjoint and one of them accepts objects only.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/grammar/json_schema_compilation.h"

namespace tandem {
namespace {

// What a branch is known to accept, from its own keywords.
struct BranchSummary {
  uint32_t types = kTypeAll;                   // widened: "number" includes the integers
  bool has_values = false;                     // enum/const: only `values`
  std::vector<const json::Value*> values;
  // Required properties whose schema has const/enum: name -> allowed values.
  std::vector<std::pair<std::string, std::vector<const json::Value*>>> tags;
};

uint32_t Widen(uint32_t types) { return (types & kTypeNumber) ? types | kTypeInteger : types; }

// The const/enum values of `schema`, if it has either.
bool ValuesOf(const json::Object& schema, std::vector<const json::Value*>* values) {
  if (const json::Value* c = schema.Find("const")) {
    values->push_back(c);
    return true;
  }
  const json::Value* e = schema.Find("enum");
  if (e == nullptr || !e->is_array()) return false;
  for (const json::Value& v : e->as_array()) values->push_back(&v);
  return true;
}

uint32_t DeclaredTypes(const json::Object& schema) {
  const json::Value* type = schema.Find("type");
  if (type == nullptr) return kTypeAll;
  std::vector<const json::Value*> names;
  if (type->is_array()) {
    for (const json::Value& v : type->as_array()) names.push_back(&v);
  } else {
    names.push_back(type);
  }
  uint32_t types = 0;
  for (const json::Value* name : names) {
    if (!name->is_string()) return kTypeAll;
    const std::string& n = name->as_string();
    types |= n == "null" ? kTypeNull : n == "boolean" ? kTypeBoolean : n == "object" ? kTypeObject
             : n == "array" ? kTypeArray : n == "string" ? kTypeString
             : n == "integer" ? kTypeInteger : n == "number" ? kTypeNumber : kTypeAll;
  }
  return types;
}

BranchSummary Summarize(const json::Object& schema) {
  BranchSummary s;
  s.types = DeclaredTypes(schema);
  if (ValuesOf(schema, &s.values)) {
    s.has_values = true;
    uint32_t value_types = 0;
    for (const json::Value* v : s.values) value_types |= JsonValueTypes(*v);
    s.types &= value_types;
  }
  const json::Value* required = schema.Find("required");
  const json::Value* properties = schema.Find("properties");
  if (required == nullptr || !required->is_array() || properties == nullptr ||
      !properties->is_object()) {
    return s;
  }
  for (const json::Value& name : required->as_array()) {
    if (!name.is_string()) continue;
    const json::Value* sub = properties->as_object().Find(name.as_string());
    std::vector<const json::Value*> values;
    if (sub != nullptr && sub->is_object() && ValuesOf(sub->as_object(), &values)) {
      s.tags.emplace_back(name.as_string(), std::move(values));
    }
  }
  return s;
}

bool Disjoint(const std::vector<const json::Value*>& a, const std::vector<const json::Value*>& b) {
  for (const json::Value* x : a) {
    for (const json::Value* y : b) {
      if (*x == *y) return false;
    }
  }
  return true;
}

bool Exclusive(const BranchSummary& a, const BranchSummary& b) {
  if ((Widen(a.types) & Widen(b.types)) == 0) return true;
  if (a.has_values && b.has_values && Disjoint(a.values, b.values)) return true;
  if (a.types != kTypeObject && b.types != kTypeObject) return false;
  for (const auto& [name, values] : a.tags) {
    for (const auto& [other_name, other_values] : b.tags) {
      if (name == other_name && Disjoint(values, other_values)) return true;
    }
  }
  return false;
}

}  // namespace

absl::Status JsonSchemaCompilation::CheckExclusive(const std::vector<const json::Value*>& branches,
                                                   const std::string& pointer) const {
  std::vector<BranchSummary> summaries;
  for (const json::Value* branch : branches) {
    // Through $ref and single-schema allOf (a bounded number of steps).
    const json::Value* at = branch;
    for (int step = 0; step < 64 && at->is_object(); ++step) {
      const json::Object& object = at->as_object();
      const json::Value* all_of = object.Find("allOf");
      const json::Value* ref = object.Find("$ref");
      std::string target;
      if (all_of != nullptr && all_of->is_array() && all_of->as_array().size() == 1) {
        at = &all_of->as_array()[0];
      } else if (ref != nullptr && ref->is_string()) {
        absl::StatusOr<const json::Value*> next = Resolve(ref->as_string(), pointer, &target);
        if (!next.ok()) return next.status();
        at = *next;
      } else {
        break;
      }
    }
    summaries.push_back(at->is_object() ? Summarize(at->as_object()) : BranchSummary{});
  }
  for (size_t i = 0; i < summaries.size(); ++i) {
    for (size_t j = i + 1; j < summaries.size(); ++j) {
      if (!Exclusive(summaries[i], summaries[j])) {
        return SchemaError(
            "oneOf", pointer,
            absl::StrCat("branches ", i, " and ", j,
                         " may both match, and the grammar cannot enforce 'exactly one' (use "
                         "anyOf, or make the branches' types or const/enum values disjoint)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem
