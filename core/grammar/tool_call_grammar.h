// The grammar of a model's tool calls: the family's call syntax (tool_call_format.h) around
// each function's parameters schema (compiled by json_schema_compiler.h), so a constrained
// model, even one with random weights, writes calls the family's parser reads.
//
//   ASSIGN_OR_RETURN(Grammar grammar, ToolCallGrammar(ToolCallFormat::kHermes, tools, choice));
//
// Per tool choice:
//  - kRequired: calls and nothing else: one call, or with `parallel` one or more in the
//    family's way of writing several (Hermes repeats <tool_call> blocks, Mistral lists them in
//    one array...), then the end of the output.
//  - kNamed: exactly one call, of that function.
//  - kAuto: lazy: free text, which may end anywhere and never holds the family's call marker
//    (free_text_rules.h), then optionally the marker and the calls (one unless `parallel`).
//    Llama 3 JSON, whose call is a bare JSON object, has no marker: the output is either the
//    calls (optionally after <|python_tag|>) or text whose first non-space character is not
//    "{". Functionary v3.2 (the prompt ends in ">>>"): the calls, or "all\n" and text until
//    ">>>" and the calls.
//  - kNone: no grammar (kInvalidArgument: the caller leaves the output unconstrained).
// A marker or tag that is a control token in some vocabularies (<|python_tag|>, [TOOL_CALLS],
// DeepSeek's <｜tool▁calls▁begin｜>, Command-R7B's <|START_ACTION|>) is accepted as text or as
// that control token (special_token.h); a parser must read control tokens as their text.
//
// The arguments are the JSON texts of the function's schema (compact, or with one whitespace
// character where JSON allows it); an object schema without `additionalProperties` is closed
// (what OpenAI's strict mode asks for, and what keeps a forced call from wandering); a null
// or empty schema means any JSON object. Around the arguments the family's envelope is
// written as its template writes it, json.dumps' ", " and ": " with or without the space;
// Command-R's envelope allows up to 16 whitespace characters between its pieces.
//
// kInvalidArgument naming the culprit: format kNone, no tools, a bad function name, a named
// choice that names no tool, a parameters schema the compiler refuses ("tool 'f' parameters:
// JSON Schema: ..."), a grammar past GrammarLimits.
//
// Thread-safe: plain functions.
#ifndef TANDEM_CORE_GRAMMAR_TOOL_CALL_GRAMMAR_H_
#define TANDEM_CORE_GRAMMAR_TOOL_CALL_GRAMMAR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/grammar/grammar.h"
#include "core/grammar/tool_call_spec.h"
#include "core/toolcall/tool_call.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem {

absl::StatusOr<Grammar> ToolCallGrammar(toolcall::ToolCallFormat format,
                                        const std::vector<toolcall::ToolFunction>& tools,
                                        const toolcall::ToolChoice& choice);

// The grammar of a spec's text (ConstraintSpec::Kind::kToolCalls; tool_call_spec.h).
absl::StatusOr<Grammar> ToolCallSpecGrammar(absl::string_view spec_text);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_TOOL_CALL_GRAMMAR_H_
