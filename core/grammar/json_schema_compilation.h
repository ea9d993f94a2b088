// One run of the JSON Schema compiler (json_schema_compiler.h) over one document: walks the
// schema, adds a rule per sub-schema and per referenced schema to a GrammarBuilder and
// refuses what it does not support. Internal to core/grammar; split by topic over
// json_schema_compilation.cc (dispatch, $ref, combinators, enum), json_schema_objects.cc
// (objects and arrays), json_schema_scalars.cc (strings and numbers), json_schema_pattern.cc
// and json_schema_one_of.cc.
//
// Recursion over sub-schemas is bounded by JsonSchemaOptions::max_depth; a $ref is compiled
// later from a work list (its depth starts again at 0), so ref chains never deepen the stack.
#ifndef TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILATION_H_
#define TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILATION_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"
#include "core/grammar/json_grammar_rules.h"
#include "core/grammar/json_schema_compiler.h"

namespace tandem {

// JSON types as a bit set.
enum JsonTypeBit : uint32_t {
  kTypeNull = 1,
  kTypeBoolean = 2,
  kTypeObject = 4,
  kTypeArray = 8,
  kTypeString = 16,
  kTypeInteger = 32,
  kTypeNumber = 64,  // any number, integers included
  kTypeAll = 127,
};

// The types a JSON value has (an integral number is an integer too, as JSON Schema says).
uint32_t JsonValueTypes(const json::Value& value);

// "#/a/b~1c" from "#/a" and "b/c".
std::string ChildPointer(absl::string_view pointer, absl::string_view token);
// kInvalidArgument "JSON Schema: 'keyword' at POINTER: what".
absl::Status SchemaError(absl::string_view keyword, absl::string_view pointer,
                         absl::string_view what);

class JsonSchemaCompilation {
 public:
  JsonSchemaCompilation(const json::Value& root, GrammarBuilder& builder,
                        const JsonSchemaOptions& options, const GrammarLimits& limits);

  // The rule of the root schema, every referenced schema defined.
  absl::StatusOr<int32_t> CompileRoot();

  // --- json_schema_compilation.cc ---
  // The rule of the sub-schema `schema` at `pointer`, `depth` levels below its ref target.
  absl::StatusOr<int32_t> SchemaRule(const json::Value& schema, const std::string& pointer,
                                     int depth);
  absl::StatusOr<GrammarExpr> SchemaExpr(const json::Value& schema, const std::string& pointer,
                                         int depth);

  // --- json_schema_objects.cc ---
  absl::StatusOr<GrammarExpr> ObjectExpr(const json::Object& schema, const std::string& pointer,
                                         int depth);
  absl::StatusOr<GrammarExpr> ArrayExpr(const json::Object& schema, const std::string& pointer,
                                        int depth);

  // --- json_schema_scalars.cc ---
  absl::StatusOr<GrammarExpr> StringExpr(const json::Object& schema, const std::string& pointer);
  // `integer_only`: the integers among the numbers.
  absl::StatusOr<GrammarExpr> NumberExpr(const json::Object& schema, const std::string& pointer,
                                         bool integer_only);
  // `pattern`'s characters, JSON-encoded (json_schema_pattern.cc).
  absl::StatusOr<GrammarExpr> PatternExpr(absl::string_view pattern, const std::string& pointer);
  // A non-negative integer keyword's value (minLength, minItems...) up to max_repeat; nullopt
  // when absent.
  absl::StatusOr<std::optional<int32_t>> ReadCount(const json::Object& schema,
                                                   absl::string_view keyword,
                                                   const std::string& pointer) const;

 private:
  absl::StatusOr<GrammarExpr> RefExpr(const json::Value& ref, const std::string& pointer);
  // The schema a "#..." reference names, and its canonical pointer.
  absl::StatusOr<const json::Value*> Resolve(absl::string_view ref, const std::string& pointer,
                                             std::string* target) const;
  absl::Status CheckNoRefCycle(const json::Value* target, const std::string& target_pointer,
                               const std::string& pointer) const;
  absl::StatusOr<GrammarExpr> CombinatorExpr(const json::Object& schema, absl::string_view keyword,
                                             const std::string& pointer, int depth);
  // oneOf: kInvalidArgument unless no value can match two branches (json_schema_one_of.cc).
  absl::Status CheckExclusive(const std::vector<const json::Value*>& branches,
                              const std::string& pointer) const;
  absl::StatusOr<GrammarExpr> EnumExpr(const json::Object& schema, const std::string& pointer);
  absl::StatusOr<uint32_t> Types(const json::Object& schema, const std::string& pointer) const;
  absl::Status CheckKeywords(const json::Object& schema, const std::string& pointer) const;
  absl::Status CheckRuleCount() const;
  // The key (quotes excluded) of an additional property: any name but `declared`.
  absl::StatusOr<GrammarExpr> KeyNotIn(const std::vector<std::string>& declared);

  const json::Value& root_;
  GrammarBuilder& builder_;
  JsonSchemaOptions options_;
  GrammarLimits limits_;
  JsonGrammarRules rules_;
  // Referenced schemas: canonical pointer -> rule; those still to define.
  absl::flat_hash_map<std::string, int32_t> ref_rules_;
  struct PendingRef {
    std::string pointer;
    const json::Value* schema;
    int32_t rule;
  };
  std::deque<PendingRef> pending_;
  // Additional-key rules by the declared names they exclude (joined by '\0').
  absl::flat_hash_map<std::string, int32_t> key_rules_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILATION_H_
