// The grammar a ConstraintSpec asks for, from the front end of its kind: JSON Schema
// (json_schema_compiler.h), any JSON object, GBNF (gbnf_parser.h), a regular expression
// (regex_compiler.h) or tool calls (tool_call_grammar.h), behind the spec's reasoning prefix
// (reasoning_prefix.h). kInvalidArgument naming the culprit; kInvalidArgument for kNone.
#ifndef TANDEM_CORE_GRAMMAR_CONSTRAINT_GRAMMAR_H_
#define TANDEM_CORE_GRAMMAR_CONSTRAINT_GRAMMAR_H_

#include "absl/status/statusor.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/grammar.h"

namespace tandem {

absl::StatusOr<Grammar> GrammarForSpec(const ConstraintSpec& spec);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_CONSTRAINT_GRAMMAR_H_
