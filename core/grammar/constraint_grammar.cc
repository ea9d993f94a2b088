#include "core/grammar/constraint_grammar.h"

#include "core/grammar/gbnf_parser.h"
#include "core/grammar/json_schema_compiler.h"
#include "core/grammar/regex_compiler.h"

namespace tandem {

absl::string_view ConstraintKindName(ConstraintSpec::Kind kind) {
  switch (kind) {
    case ConstraintSpec::Kind::kNone: return "none";
    case ConstraintSpec::Kind::kJsonObject: return "json_object";
    case ConstraintSpec::Kind::kJsonSchema: return "json_schema";
    case ConstraintSpec::Kind::kGrammar: return "grammar";
    case ConstraintSpec::Kind::kRegex: return "regex";
  }
  return "none";
}

absl::StatusOr<Grammar> GrammarForSpec(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonObject: return JsonObjectGrammar();
    case ConstraintSpec::Kind::kJsonSchema: return CompileJsonSchema(spec.text);
    case ConstraintSpec::Kind::kGrammar: return ParseGbnf(spec.text);
    case ConstraintSpec::Kind::kRegex: return CompileRegex(spec.text);
    case ConstraintSpec::Kind::kNone: break;
  }
  return absl::InvalidArgumentError("no constraint to compile");
}

}  // namespace tandem
