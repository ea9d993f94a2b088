#include "core/grammar/constraint_grammar.h"

#include "core/base/status_macros.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/json_schema_compiler.h"
#include "core/grammar/reasoning_prefix.h"
#include "core/grammar/regex_compiler.h"
#include "core/grammar/tool_call_grammar.h"

namespace tandem {
namespace {

// The grammar of the constrained part alone.
absl::StatusOr<Grammar> KindGrammar(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonObject: return JsonObjectGrammar();
    case ConstraintSpec::Kind::kJsonSchema: return CompileJsonSchema(spec.text);
    case ConstraintSpec::Kind::kGrammar: return ParseGbnf(spec.text);
    case ConstraintSpec::Kind::kRegex: return CompileRegex(spec.text);
    case ConstraintSpec::Kind::kToolCalls: return ToolCallSpecGrammar(spec.text);
    case ConstraintSpec::Kind::kNone: break;
  }
  return absl::InvalidArgumentError("no constraint to compile");
}

}  // namespace

absl::string_view ConstraintKindName(ConstraintSpec::Kind kind) {
  switch (kind) {
    case ConstraintSpec::Kind::kNone: return "none";
    case ConstraintSpec::Kind::kJsonObject: return "json_object";
    case ConstraintSpec::Kind::kJsonSchema: return "json_schema";
    case ConstraintSpec::Kind::kGrammar: return "grammar";
    case ConstraintSpec::Kind::kRegex: return "regex";
    case ConstraintSpec::Kind::kToolCalls: return "tool_calls";
  }
  return "none";
}

absl::string_view ReasoningPrefixName(ReasoningPrefix reasoning) {
  switch (reasoning) {
    case ReasoningPrefix::kNone: return "none";
    case ReasoningPrefix::kInPrompt: return "in_prompt";
    case ReasoningPrefix::kOptional: return "optional";
  }
  return "none";
}

absl::StatusOr<Grammar> GrammarForSpec(const ConstraintSpec& spec) {
  ASSIGN_OR_RETURN(Grammar grammar, KindGrammar(spec));
  return WithReasoningPrefix(std::move(grammar), spec.reasoning);
}

}  // namespace tandem
