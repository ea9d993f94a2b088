#include "core/grammar/constraint_grammar.h"

#include "absl/strings/str_cat.h"
#include "core/grammar/gbnf_parser.h"

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
    case ConstraintSpec::Kind::kGrammar: return ParseGbnf(spec.text);
    case ConstraintSpec::Kind::kNone:
      return absl::InvalidArgumentError("no constraint to compile");
    default: break;
  }
  // The other front ends are wired in as they land.
  return absl::UnimplementedError(
      absl::StrCat("constraint kind ", ConstraintKindName(spec.kind), " is not available yet"));
}

}  // namespace tandem
