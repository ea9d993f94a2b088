#include "core/grammar/tool_call_syntax.h"

#include <utility>

#include "core/grammar/special_token.h"

namespace tandem {
namespace {

using toolcall::ToolCallFormat;

GrammarExpr Lit(std::string text) { return GrammarExpr::Literal(std::move(text)); }
GrammarExpr Seq(std::vector<GrammarExpr> parts) { return GrammarExpr::Sequence(std::move(parts)); }
GrammarExpr Quoted(const std::string& name) { return Lit("\"" + name + "\""); }
// ", " and ": " as json.dumps writes them, or without the space.
GrammarExpr OptionalSpace() { return GrammarExpr::Optional(Lit(" ")); }

// {"k1": v1, "k2": v2, ...} with `ws` around the punctuation.
GrammarExpr JsonEnvelope(std::vector<std::pair<std::string, GrammarExpr>> members,
                         const GrammarExpr& ws) {
  std::vector<GrammarExpr> parts = {Lit("{"), ws};
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) {
      parts.push_back(ws);
      parts.push_back(Lit(","));
      parts.push_back(ws);
    }
    parts.push_back(Quoted(members[i].first));
    parts.push_back(ws);
    parts.push_back(Lit(":"));
    parts.push_back(ws);
    parts.push_back(std::move(members[i].second));
  }
  parts.push_back(ws);
  parts.push_back(Lit("}"));
  return Seq(std::move(parts));
}

// {"name": "f", "<arguments_key>": {...}}
CallSyntax NameAndArguments(std::string arguments_key) {
  CallSyntax syntax;
  syntax.call = [key = std::move(arguments_key)](const std::string& name, GrammarExpr args) {
    return JsonEnvelope({{"name", Quoted(name)}, {key, std::move(args)}}, OptionalSpace());
  };
  return syntax;
}

CallSyntax Llama3Json() {
  CallSyntax syntax = NameAndArguments("parameters");
  syntax.separator = Seq({Lit(";"), OptionalSpace()});
  return syntax;
}

CallSyntax Hermes() {
  CallSyntax syntax;
  syntax.marker = "<tool_call>";
  syntax.call = [](const std::string& name, GrammarExpr args) {
    return Seq(
        {Lit("\n"),
         JsonEnvelope({{"name", Quoted(name)}, {"arguments", std::move(args)}}, OptionalSpace()),
         Lit("\n"), TextOrSpecialToken("</tool_call>")});
  };
  syntax.separator = Seq({GrammarExpr::Optional(Lit("\n")), TextOrSpecialToken("<tool_call>")});
  return syntax;
}

CallSyntax Mistral() {
  CallSyntax syntax;
  syntax.marker = "[TOOL_CALLS]";
  syntax.open = Lit("[");
  syntax.call = [](const std::string& name, GrammarExpr args) {
    // The template's id: nine letters or digits.
    GrammarExpr id = Seq(
        {Lit("\""),
         GrammarExpr::Repeat(GrammarExpr::CharClass({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}), 9, 9),
         Lit("\"")});
    return JsonEnvelope(
        {{"name", Quoted(name)}, {"arguments", std::move(args)}, {"id", std::move(id)}},
        OptionalSpace());
  };
  syntax.separator = Seq({Lit(","), OptionalSpace()});
  syntax.close = Lit("]");
  return syntax;
}

CallSyntax FunctionaryV31() {
  CallSyntax syntax;
  syntax.marker = "<function=";
  syntax.marker_special = false;
  syntax.call = [](const std::string& name, GrammarExpr args) {
    return Seq({Lit(name + ">"), std::move(args), Lit("</function>")});
  };
  syntax.separator = Lit("<function=");
  return syntax;
}

// The template's generation prompt ends in ">>>": the first call starts with the name.
CallSyntax FunctionaryV32() {
  CallSyntax syntax;
  syntax.call = [](const std::string& name, GrammarExpr args) {
    return Seq({Lit(name + "\n"), std::move(args)});
  };
  syntax.separator = Lit(">>>");
  return syntax;
}

CallSyntax FirefunctionV2() {
  CallSyntax syntax = NameAndArguments("arguments");
  syntax.marker = "functools[";
  syntax.marker_special = false;
  syntax.before = OptionalSpace();  // the template writes " functools["
  syntax.separator = Seq({Lit(","), OptionalSpace()});
  syntax.close = Lit("]");
  return syntax;
}

// Command-R / R+: Action:\n```json\n[\n    {"tool_name": ..., "parameters": ...}\n]```
CallSyntax CommandRAction(const GrammarExpr& ws) {
  CallSyntax syntax;
  syntax.marker = "Action:";
  syntax.marker_special = false;
  syntax.open = Seq({ws, Lit("```json"), ws, Lit("["), ws});
  syntax.call = [ws](const std::string& name, GrammarExpr args) {
    return JsonEnvelope({{"tool_name", Quoted(name)}, {"parameters", std::move(args)}}, ws);
  };
  syntax.separator = Seq({ws, Lit(","), ws});
  syntax.close = Seq({ws, Lit("]"), ws, Lit("```")});
  return syntax;
}

// Command-R7B: <|START_ACTION|>[{"tool_call_id": "0", "tool_name": ..., "parameters": ...}]
// <|END_ACTION|>
CallSyntax CommandR7bAction(const GrammarExpr& ws) {
  CallSyntax syntax;
  syntax.marker = "<|START_ACTION|>";
  syntax.open = Seq({Lit("["), ws});
  syntax.call = [ws](const std::string& name, GrammarExpr args) {
    GrammarExpr id = Seq(
        {Lit("\""), GrammarExpr::Repeat(GrammarExpr::CharClass({{'0', '9'}}), 1, 4), Lit("\"")});
    return JsonEnvelope({{"tool_call_id", std::move(id)},
                         {"tool_name", Quoted(name)},
                         {"parameters", std::move(args)}},
                        ws);
  };
  syntax.separator = Seq({ws, Lit(","), ws});
  syntax.close = Seq({ws, Lit("]"), TextOrSpecialToken("<|END_ACTION|>")});
  return syntax;
}

CallSyntax DeepSeekR1() {
  CallSyntax syntax;
  syntax.marker = "<｜tool▁calls▁begin｜>";
  syntax.call = [](const std::string& name, GrammarExpr args) {
    return Seq({TextOrSpecialToken("<｜tool▁call▁begin｜>"), Lit("function"),
                TextOrSpecialToken("<｜tool▁sep｜>"), Lit(name + "\n```json\n"), std::move(args),
                Lit("\n```"), TextOrSpecialToken("<｜tool▁call▁end｜>")});
  };
  syntax.separator = GrammarExpr::Optional(Lit("\n"));
  syntax.close = TextOrSpecialToken("<｜tool▁calls▁end｜>");
  return syntax;
}

}  // namespace

FamilySyntax ToolCallSyntax(ToolCallFormat format, GrammarExpr whitespace) {
  FamilySyntax family;
  switch (format) {
    case ToolCallFormat::kLlama3Json:
      family.variants = {Llama3Json()};
      break;
    case ToolCallFormat::kHermes:
      family.variants = {Hermes()};
      break;
    case ToolCallFormat::kMistral:
      family.variants = {Mistral()};
      break;
    case ToolCallFormat::kFunctionaryV31:
      family.variants = {FunctionaryV31()};
      break;
    case ToolCallFormat::kFunctionaryV32:
      family.variants = {FunctionaryV32()};
      break;
    case ToolCallFormat::kFirefunctionV2:
      family.variants = {FirefunctionV2()};
      break;
    case ToolCallFormat::kCommandR:
      family.variants = {CommandRAction(whitespace), CommandR7bAction(whitespace)};
      family.text_special_tokens = {"<|START_THINKING|>", "<|END_THINKING|>", "<|START_RESPONSE|>",
                                    "<|END_RESPONSE|>"};
      break;
    case ToolCallFormat::kDeepSeekR1:
      family.variants = {DeepSeekR1()};
      break;
    case ToolCallFormat::kNone:
      break;
  }
  return family;
}

}  // namespace tandem
