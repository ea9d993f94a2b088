#include "core/grammar/json_schema_compiler.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/json_grammar_rules.h"
#include "core/grammar/json_schema_compilation.h"

namespace tandem {
namespace {

absl::Status CheckOptions(const JsonSchemaOptions& options) {
  if (options.max_whitespace < 0 || options.max_whitespace > JsonSchemaOptions::kMaxWhitespace) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON Schema: max_whitespace ", options.max_whitespace, " is not in 0..",
                     JsonSchemaOptions::kMaxWhitespace));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Grammar> CompileJsonSchema(absl::string_view schema_json,
                                          const JsonSchemaOptions& options,
                                          const GrammarLimits& limits) {
  RETURN_IF_ERROR(CheckOptions(options));
  if (schema_json.size() > options.max_schema_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON Schema: the document is ", schema_json.size(),
                     " bytes, past max_schema_bytes=", options.max_schema_bytes));
  }
  absl::StatusOr<json::Value> schema = json::Parse(schema_json);
  if (!schema.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON Schema: not a JSON document: ", schema.status().message()));
  }
  GrammarBuilder builder(limits);
  JsonSchemaCompilation compilation(*schema, builder, options, limits);
  ASSIGN_OR_RETURN(const int32_t root, compilation.CompileRoot());
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  if (!grammar.ok()) {
    // Left recursion or a limit; a rule's name is the JSON pointer of its schema.
    return absl::Status(grammar.status().code(),
                        absl::StrCat("JSON Schema: ", grammar.status().message()));
  }
  return grammar;
}

absl::StatusOr<Grammar> JsonObjectGrammar(const JsonSchemaOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  GrammarBuilder builder;
  JsonGrammarRules rules(builder, options.max_whitespace);
  const GrammarExpr object = rules.Object();
  RETURN_IF_ERROR(rules.status());
  return std::move(builder).Build(object.rule);
}

absl::StatusOr<int32_t> AddJsonSchemaRule(const json::Value& schema, GrammarBuilder& builder,
                                          const JsonSchemaOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  JsonSchemaCompilation compilation(schema, builder, options, GrammarLimits{});
  return compilation.CompileRoot();
}

}  // namespace tandem
