// Objects and arrays of the JSON Schema compiler (json_schema_compilation.h).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/json_schema_compilation.h"

namespace tandem {
namespace {

using E = GrammarExpr;

bool IsFalse(const json::Value& v) { return v.is_bool() && !v.as_bool(); }

struct Member {
  std::string name;
  bool required = false;
  GrammarExpr value;
};

}  // namespace

// Members come in the declared order. With f the first required member (or the last member
// when none is), the body is one of: m_k R_{k+1} for k <= f, where R_i = (, m_i)? R_{i+1} for
// optional members and , m_i R_{i+1} for required ones, and R_n the additional members; or,
// when nothing is required, only additional members or nothing. R_1..R_{f+1} are rules, so the
// grammar stays linear in the number of members.
absl::StatusOr<GrammarExpr> JsonSchemaCompilation::ObjectExpr(const json::Object& schema,
                                                              const std::string& pointer,
                                                              int depth) {
  const json::Value* properties = schema.Find("properties");
  const json::Value* required = schema.Find("required");
  const json::Value* additional = schema.Find("additionalProperties");
  if (properties != nullptr && !properties->is_object()) {
    return SchemaError("properties", pointer, "must be an object of schemas");
  }
  std::vector<std::string> required_names;
  if (required != nullptr) {
    if (!required->is_array()) return SchemaError("required", pointer, "must be an array of strings");
    for (const json::Value& name : required->as_array()) {
      if (!name.is_string()) return SchemaError("required", pointer, "must be an array of strings");
      if (std::find(required_names.begin(), required_names.end(), name.as_string()) ==
          required_names.end()) {
        required_names.push_back(name.as_string());
      }
    }
  }
  const size_t declared = properties != nullptr ? properties->as_object().size() : 0;
  if (declared > static_cast<size_t>(options_.max_keyword_entries) ||
      required_names.size() > static_cast<size_t>(options_.max_keyword_entries)) {
    return SchemaError(declared > required_names.size() ? "properties" : "required", pointer,
                       absl::StrCat("past max_keyword_entries=", options_.max_keyword_entries));
  }
  // Additional members: their value, or none.
  std::optional<GrammarExpr> additional_value;
  if (additional == nullptr) {
    if (options_.additional_properties_by_default) additional_value = rules_.Value();
  } else if (!IsFalse(*additional)) {
    ASSIGN_OR_RETURN(const int32_t rule,
                     SchemaRule(*additional, ChildPointer(pointer, "additionalProperties"),
                                depth + 1));
    additional_value = E::Rule(rule);
  }
  auto is_required = [&](const std::string& name) {
    return std::find(required_names.begin(), required_names.end(), name) != required_names.end();
  };
  std::vector<Member> members;
  std::vector<std::string> names;
  if (properties != nullptr) {
    const std::string here = ChildPointer(pointer, "properties");
    for (const auto& [name, sub] : properties->as_object()) {
      names.push_back(name);
      if (IsFalse(sub)) {
        if (is_required(name)) {
          return SchemaError("required", pointer,
                             absl::StrCat("the required property \"", name, "\" is false"));
        }
        continue;
      }
      ASSIGN_OR_RETURN(const int32_t rule, SchemaRule(sub, ChildPointer(here, name), depth + 1));
      members.push_back({name, is_required(name), E::Rule(rule)});
    }
  }
  for (const std::string& name : required_names) {
    if (properties != nullptr && properties->as_object().Contains(name)) continue;
    if (!additional_value) {
      return SchemaError("required", pointer,
                         absl::StrCat("the required property \"", name,
                                      "\" is not in properties and additionalProperties is false"));
    }
    names.push_back(name);
    members.push_back({name, true, *additional_value});
  }

  const GrammarExpr ws = rules_.Whitespace();
  const GrammarExpr comma = E::Sequence({ws, E::Literal(","), ws});
  std::vector<GrammarExpr> member_exprs;
  for (const Member& m : members) {
    member_exprs.push_back(
        rules_.Member(E::Literal(absl::StrCat("\"", CanonicalJsonChars(m.name), "\"")), m.value));
  }
  std::optional<GrammarExpr> extra_member;
  if (additional_value) {
    ASSIGN_OR_RETURN(GrammarExpr key, KeyNotIn(names));
    extra_member = rules_.Member(E::Sequence({E::Literal("\""), std::move(key), E::Literal("\"")}),
                                 *additional_value);
  }
  const size_t n = members.size();
  size_t first_required = n == 0 ? 0 : n - 1;
  for (size_t i = 0; i < n; ++i) {
    if (members[i].required) {
      first_required = i;
      break;
    }
  }
  const bool none_required = n == 0 || !members[first_required].required;
  // R_{f+1}: the members after f, then the additional ones.
  std::vector<GrammarExpr> tail;
  for (size_t i = first_required + 1; i < n; ++i) {
    GrammarExpr part = E::Sequence({comma, member_exprs[i]});
    tail.push_back(members[i].required ? std::move(part) : E::Optional(std::move(part)));
  }
  if (extra_member) tail.push_back(E::Repeat(E::Sequence({comma, *extra_member}), 0, kUnbounded));
  GrammarExpr rest = E::Sequence(std::move(tail));
  std::vector<GrammarExpr> alternatives;
  if (n > 0) {
    // From f down to 0: alternative k is m_k R_{k+1}; R_k is m_k's part then R_{k+1}.
    for (size_t k = first_required + 1; k-- > 0;) {
      if (k >= 1 && rest.kind != GrammarExpr::Kind::kRule) {
        // R_{k+1} serves alternative k and R_k: a rule, so it is written once.
        rest = E::Rule(rules_.AddRule(absl::StrCat(pointer, " members after ", members[k].name),
                                      std::move(rest)));
      }
      alternatives.push_back(E::Sequence({member_exprs[k], rest, ws}));
      if (k >= 1) {
        GrammarExpr part = E::Sequence({comma, member_exprs[k]});
        rest = E::Sequence(
            {members[k].required ? std::move(part) : E::Optional(std::move(part)), rest});
      }
    }
    std::reverse(alternatives.begin(), alternatives.end());
  }
  if (none_required) {
    if (extra_member) {
      alternatives.push_back(E::Sequence(
          {*extra_member, E::Repeat(E::Sequence({comma, *extra_member}), 0, kUnbounded), ws}));
    }
    alternatives.push_back(E::Empty());
  }
  RETURN_IF_ERROR(CheckRuleCount());
  return E::Sequence({E::Literal("{"), ws,
                      alternatives.size() == 1 ? std::move(alternatives[0])
                                               : E::Choice(std::move(alternatives)),
                      E::Literal("}")});
}

// A trie of the declared names, a rule per node: at each node the key may end (unless a name
// ends there), go on with a child's character, or go on with any other character and then
// anything.
absl::StatusOr<GrammarExpr> JsonSchemaCompilation::KeyNotIn(
    const std::vector<std::string>& declared) {
  const GrammarExpr any_rest = E::Repeat(rules_.KeyChar(), 0, kUnbounded);
  if (declared.empty()) return any_rest;
  std::string cache_key;
  for (const std::string& name : declared) absl::StrAppend(&cache_key, name.size(), ":", name);
  if (auto it = key_rules_.find(cache_key); it != key_rules_.end()) return E::Rule(it->second);
  struct Node {
    std::map<uint32_t, int32_t> children;  // code point -> node index
    bool terminal = false;
  };
  std::vector<Node> nodes(1);
  for (const std::string& name : declared) {
    int32_t at = 0;
    for (uint32_t cp : DecodeUtf8(name)) {
      auto it = nodes[at].children.find(cp);
      if (it == nodes[at].children.end()) {
        nodes.push_back({});
        it = nodes[at].children.emplace(cp, static_cast<int32_t>(nodes.size() - 1)).first;
      }
      at = it->second;
    }
    nodes[at].terminal = true;
  }
  if (builder_.rule_count() + nodes.size() > static_cast<size_t>(limits_.max_rules)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "JSON Schema: the property names need more than max_rules=", limits_.max_rules, " rules"));
  }
  std::vector<int32_t> ids(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) ids[i] = builder_.AddRule("additional-property-key");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<GrammarExpr> alternatives;
    if (!nodes[i].terminal) alternatives.push_back(E::Empty());
    std::vector<uint32_t> taken;
    for (const auto& [cp, child] : nodes[i].children) {
      taken.push_back(cp);
      alternatives.push_back(E::Sequence({E::Literal(CanonicalJsonChar(cp)), E::Rule(ids[child])}));
    }
    alternatives.push_back(E::Sequence({rules_.KeyCharExcept(taken), any_rest}));
    RETURN_IF_ERROR(builder_.DefineRule(ids[i], E::Choice(std::move(alternatives))));
  }
  key_rules_[cache_key] = ids[0];
  return E::Rule(ids[0]);
}

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::ArrayExpr(const json::Object& schema,
                                                             const std::string& pointer,
                                                             int depth) {
  const json::Value* prefix = schema.Find("prefixItems");
  const json::Value* items = schema.Find("items");
  if (prefix != nullptr && !prefix->is_array()) {
    return SchemaError("prefixItems", pointer, "must be an array of schemas");
  }
  if (items != nullptr && items->is_array()) {
    return SchemaError("items", pointer,
                       "an array of schemas (the draft 2019 tuple form) is not supported; use "
                       "prefixItems");
  }
  ASSIGN_OR_RETURN(std::optional<int32_t> min_items, ReadCount(schema, "minItems", pointer));
  ASSIGN_OR_RETURN(std::optional<int32_t> max_items, ReadCount(schema, "maxItems", pointer));
  const int32_t lo = min_items.value_or(0);
  int32_t hi = max_items.value_or(kUnbounded);
  auto at_most = [&hi](int32_t n) { hi = hi == kUnbounded ? n : std::min(hi, n); };
  const size_t prefix_count = prefix != nullptr ? prefix->as_array().size() : 0;
  if (prefix_count > static_cast<size_t>(options_.max_keyword_entries)) {
    return SchemaError("prefixItems", pointer,
                       absl::StrCat(prefix_count, " schemas, past max_keyword_entries=",
                                    options_.max_keyword_entries));
  }
  // The element schemas of the first positions; a false one ends the array before it.
  std::vector<GrammarExpr> positions;
  for (size_t i = 0; i < prefix_count; ++i) {
    if (hi != kUnbounded && static_cast<int32_t>(i) >= hi) break;
    const json::Value& sub = prefix->as_array()[i];
    if (IsFalse(sub)) {
      at_most(static_cast<int32_t>(i));
      break;
    }
    ASSIGN_OR_RETURN(const int32_t rule,
                     SchemaRule(sub, ChildPointer(ChildPointer(pointer, "prefixItems"),
                                                  std::to_string(i)),
                                depth + 1));
    positions.push_back(E::Rule(rule));
  }
  std::optional<GrammarExpr> item;
  if (items == nullptr) {
    item = rules_.Value();
  } else if (!IsFalse(*items)) {
    ASSIGN_OR_RETURN(const int32_t rule, SchemaRule(*items, ChildPointer(pointer, "items"), depth + 1));
    item = E::Rule(rule);
  }
  const int32_t k = static_cast<int32_t>(positions.size());
  if (!item || static_cast<size_t>(k) < prefix_count) at_most(k);
  if (hi != kUnbounded && lo > hi) {
    return SchemaError("minItems", pointer,
                       absl::StrCat("no array can have ", lo, " items here (at most ", hi, ")"));
  }
  const GrammarExpr ws = rules_.Whitespace();
  const GrammarExpr comma = E::Sequence({ws, E::Literal(","), ws});
  if (hi == 0) return E::Sequence({E::Literal("["), ws, E::Literal("]")});
  // The elements after the prefix: item repeated.
  GrammarExpr rest = E::Empty();
  if (item && (hi == kUnbounded || hi > k)) {
    rest = E::Repeat(E::Sequence({comma, *item}), std::max(lo - std::max(k, 1), 0),
                     hi == kUnbounded ? kUnbounded : hi - std::max(k, 1));
  }
  if (k == 0) positions.push_back(*item);  // the first element is an item
  // Positions 1..k-1, each optional past minItems; a rule every 16 levels bounds the nesting.
  for (int32_t i = static_cast<int32_t>(positions.size()) - 1; i >= 1; --i) {
    GrammarExpr part = E::Sequence({comma, positions[i], std::move(rest)});
    rest = i >= lo ? E::Optional(std::move(part)) : std::move(part);
    if (i % 16 == 0) rest = E::Rule(rules_.AddRule(absl::StrCat(pointer, " items"), std::move(rest)));
  }
  GrammarExpr elements = E::Sequence({positions[0], std::move(rest), ws});
  RETURN_IF_ERROR(CheckRuleCount());
  return E::Sequence({E::Literal("["), ws, lo == 0 ? E::Optional(std::move(elements))
                                                   : std::move(elements),
                      E::Literal("]")});
}

}  // namespace tandem
