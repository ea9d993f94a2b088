#include "core/grammar/tool_call_grammar.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/grammar/free_text_rules.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/json_schema_compiler.h"
#include "core/grammar/special_token.h"
#include "core/grammar/tool_call_syntax.h"

namespace tandem {
namespace {

using toolcall::ToolCallFormat;
using toolcall::ToolChoice;
using toolcall::ToolFunction;

constexpr int32_t kArgumentsWhitespace = 1;  // JSON whitespace characters per place
constexpr int32_t kEnvelopeWhitespace = 16;  // Command-R: "\n" and an indent of 8, with room

absl::Status CheckRequest(ToolCallFormat format, const std::vector<ToolFunction>& tools,
                          const ToolChoice& choice) {
  if (format == ToolCallFormat::kNone) {
    return absl::InvalidArgumentError("tool calls: the model has no tool-call format");
  }
  if (tools.empty()) return absl::InvalidArgumentError("tool calls: no tools");
  for (const ToolFunction& tool : tools) {
    if (absl::Status valid = CheckToolName(tool.name); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("tool calls: ", valid.message()));
    }
  }
  if (choice.mode == ToolChoice::Mode::kNone) {
    return absl::InvalidArgumentError(
        "tool calls: tool_choice 'none' leaves the output unconstrained (no grammar)");
  }
  if (choice.mode == ToolChoice::Mode::kNamed) {
    for (const ToolFunction& tool : tools) {
      if (tool.name == choice.function) return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("tool calls: tool_choice names function '",
                                                   choice.function, "', which is not a tool"));
  }
  return absl::OkStatus();
}

// The rule of a function's arguments.
absl::StatusOr<GrammarExpr> ArgumentsRule(const ToolFunction& tool, GrammarBuilder& builder) {
  json::Value schema = tool.parameters;
  if (schema.is_null() || (schema.is_object() && schema.as_object().empty())) {
    schema = json::Object{{"type", "object"}, {"additionalProperties", true}};
  }
  JsonSchemaOptions options;
  options.max_whitespace = kArgumentsWhitespace;
  options.additional_properties_by_default = false;
  absl::StatusOr<int32_t> rule = AddJsonSchemaRule(schema, builder, options);
  if (!rule.ok()) {
    return absl::Status(
        rule.status().code(),
        absl::StrCat("tool '", tool.name, "' parameters: ", rule.status().message()));
  }
  return GrammarExpr::Rule(*rule);
}

absl::StatusOr<int32_t> DefinedRule(GrammarBuilder& builder, std::string name, GrammarExpr body) {
  const int32_t id = builder.AddRule(std::move(name));
  RETURN_IF_ERROR(builder.DefineRule(id, std::move(body)));
  return id;
}

GrammarExpr MarkerExpr(const CallSyntax& syntax) {
  if (syntax.marker.empty()) return GrammarExpr::Empty();
  return syntax.marker_special ? TextOrSpecialToken(syntax.marker)
                               : GrammarExpr::Literal(syntax.marker);
}

// The calls after a variant's marker: open call (separator call)* close.
absl::StatusOr<int32_t> CallsRule(GrammarBuilder& builder, const CallSyntax& syntax,
                                  const std::vector<ToolFunction>& tools,
                                  const std::vector<GrammarExpr>& arguments,
                                  const ToolChoice& choice) {
  std::vector<GrammarExpr> calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (choice.mode == ToolChoice::Mode::kNamed && tools[i].name != choice.function) continue;
    calls.push_back(syntax.call(tools[i].name, arguments[i]));
  }
  ASSIGN_OR_RETURN(const int32_t call, DefinedRule(builder, "call", GrammarExpr::Choice(calls)));
  const bool several = choice.parallel && choice.mode != ToolChoice::Mode::kNamed;
  GrammarExpr more =
      several
          ? GrammarExpr::Repeat(GrammarExpr::Sequence({syntax.separator, GrammarExpr::Rule(call)}),
                                0, kUnbounded)
          : GrammarExpr::Empty();
  return DefinedRule(
      builder, "calls",
      GrammarExpr::Sequence({syntax.open, GrammarExpr::Rule(call), std::move(more), syntax.close}));
}

// Llama 3 JSON's plain answer: text whose first character after any whitespace is not "{".
absl::StatusOr<GrammarExpr> NotACall(GrammarBuilder& builder) {
  ASSIGN_OR_RETURN(GrammarExpr text, AddFreeTextRules(builder, "text", {}));
  const std::vector<CodepointRange> space = {{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}};
  std::vector<CodepointRange> space_or_brace = space;
  space_or_brace.push_back({'{', '{'});
  return GrammarExpr::Sequence(
      {GrammarExpr::Repeat(GrammarExpr::CharClass(space), 0, kUnbounded),
       GrammarExpr::Optional(GrammarExpr::Sequence(
           {GrammarExpr::CharClass(space_or_brace, /*negated=*/true), std::move(text)}))});
}

// kAuto: free text, then optionally a variant's marker and its calls.
absl::StatusOr<GrammarExpr> LazyBody(GrammarBuilder& builder, ToolCallFormat format,
                                     const FamilySyntax& family,
                                     const std::vector<int32_t>& calls_rules) {
  if (format == ToolCallFormat::kLlama3Json) {
    ASSIGN_OR_RETURN(GrammarExpr text, NotACall(builder));
    return GrammarExpr::Choice(
        {GrammarExpr::Sequence({GrammarExpr::Optional(TextOrSpecialToken("<|python_tag|>")),
                                GrammarExpr::Rule(calls_rules[0])}),
         std::move(text)});
  }
  if (format == ToolCallFormat::kFunctionaryV32) {
    ASSIGN_OR_RETURN(
        GrammarExpr text,
        AddFreeTextRules(builder, "text", {{">>>", GrammarExpr::Rule(calls_rules[0]), false}}));
    return GrammarExpr::Choice(
        {GrammarExpr::Rule(calls_rules[0]),
         GrammarExpr::Sequence({GrammarExpr::Literal("all\n"), std::move(text)})});
  }
  std::vector<TextMarker> markers;
  for (size_t v = 0; v < family.variants.size(); ++v) {
    const CallSyntax& syntax = family.variants[v];
    markers.push_back({syntax.marker, GrammarExpr::Rule(calls_rules[v]), syntax.marker_special});
  }
  FreeTextOptions options;
  options.special_tokens = family.text_special_tokens;
  return AddFreeTextRules(builder, "text", markers, options);
}

}  // namespace

absl::StatusOr<Grammar> ToolCallGrammar(ToolCallFormat format,
                                        const std::vector<ToolFunction>& tools,
                                        const ToolChoice& choice) {
  RETURN_IF_ERROR(CheckRequest(format, tools, choice));
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  std::vector<GrammarExpr> arguments(tools.size());
  for (size_t i = 0; i < tools.size(); ++i) {
    if (choice.mode == ToolChoice::Mode::kNamed && tools[i].name != choice.function) continue;
    ASSIGN_OR_RETURN(arguments[i], ArgumentsRule(tools[i], builder));
  }
  ASSIGN_OR_RETURN(
      const int32_t ws,
      DefinedRule(builder, "ws",
                  GrammarExpr::Repeat(GrammarExpr::CharClass({{'\t', '\n'}, {' ', ' '}}), 0,
                                      kEnvelopeWhitespace)));
  const FamilySyntax family = ToolCallSyntax(format, GrammarExpr::Rule(ws));
  std::vector<int32_t> calls_rules;
  std::vector<GrammarExpr> forced;
  for (const CallSyntax& syntax : family.variants) {
    ASSIGN_OR_RETURN(const int32_t calls, CallsRule(builder, syntax, tools, arguments, choice));
    calls_rules.push_back(calls);
    forced.push_back(
        GrammarExpr::Sequence({syntax.before, MarkerExpr(syntax), GrammarExpr::Rule(calls)}));
  }
  GrammarExpr body = GrammarExpr::Choice(std::move(forced));
  if (choice.mode == ToolChoice::Mode::kAuto) {
    ASSIGN_OR_RETURN(body, LazyBody(builder, format, family, calls_rules));
  }
  RETURN_IF_ERROR(builder.DefineRule(root, std::move(body)));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  if (!grammar.ok()) {
    return absl::Status(grammar.status().code(),
                        absl::StrCat("tool calls: ", grammar.status().message()));
  }
  return grammar;
}

absl::StatusOr<Grammar> ToolCallSpecGrammar(absl::string_view spec_text) {
  ASSIGN_OR_RETURN(ToolCallSpec spec, ParseToolCallSpecText(spec_text));
  return ToolCallGrammar(spec.format, spec.tools, spec.choice);
}

}  // namespace tandem
