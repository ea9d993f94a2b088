// What the served model's output syntax (output_syntax.h) means for one request: with tools,
// the tool-call constraint its tool_choice asks for and the calls parsed out of its reply;
// for a reasoning model's chat, the reasoning split out of the reply and every constraint
// starting after the reasoning (ConstraintSpec::reasoning).
//
//   tool_choice NONE           the tools are shown to the model; the reply is text
//   AUTO (or unset)            text, or calls from the family's call marker on (constrained)
//   REQUIRED / FUNCTION        calls only (constrained), of any tool / of the one named
//
// Refused with kInvalidArgument naming the field: tools for a model whose template has no
// tool-call format Tandem knows (start the coordinator with --tool-call-format), a tool whose
// parameters are not a JSON object, tool_choice without tools or naming no tool, calls forced
// together with another constraint, a client-set constraint.tool_calls.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_REPLY_SYNTAX_H_
#define TANDEM_SERVICES_COORDINATOR_REPLY_SYNTAX_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/grammar/constraint_spec.h"
#include "services/coordinator/output_syntax.h"
#include "services/coordinator/reply_parser.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// `rendered_prompt`: the prompt text as rendered (a chat's template output). `constraint`
// holds the request's own constraint (from Constraint) and receives the final one.
absl::Status ApplyReplySyntax(const v1::GenerateRequest& request, const OutputSyntax& syntax,
                              absl::string_view rendered_prompt, ConstraintSpec* constraint,
                              ReplyParsing* parsing);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REPLY_SYNTAX_H_
