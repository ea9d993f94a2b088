// Each tool-call family's way of writing calls (tool_call_format.h describes them), as the
// pieces ToolCallGrammar (tool_call_grammar.h) assembles: the marker that opens the calls, the
// call of one function around its arguments, what separates calls and what closes them.
// Internal to core/grammar.
#ifndef TANDEM_CORE_GRAMMAR_TOOL_CALL_SYNTAX_H_
#define TANDEM_CORE_GRAMMAR_TOOL_CALL_SYNTAX_H_

#include <functional>
#include <string>
#include <vector>

#include "core/grammar/grammar_expr.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem {

// One way a family writes its calls: [before] marker open call (separator call)* close.
struct CallSyntax {
  // Where the calls start; in a lazy grammar, where the free text stops. Empty: no marker.
  std::string marker;
  bool marker_special = true;  // the marker may also be the control token of that text
  // Before the marker when nothing else is allowed before it (firefunction's " ").
  GrammarExpr before = GrammarExpr::Empty();
  GrammarExpr open = GrammarExpr::Empty();
  // The call of function `name` (valid: [A-Za-z0-9_.-]+) whose arguments are `arguments`.
  std::function<GrammarExpr(const std::string& name, GrammarExpr arguments)> call;
  GrammarExpr separator = GrammarExpr::Empty();
  GrammarExpr close = GrammarExpr::Empty();
};

struct FamilySyntax {
  std::vector<CallSyntax> variants;  // one, or several the family's models write
  // Control tokens free text may hold in a lazy grammar (Command-R7B's thinking and response
  // tokens).
  std::vector<std::string> text_special_tokens;
};

// `whitespace`: a rule of the whitespace a family writes between the pieces of its JSON
// (Command-R's indented lists). Unspecified for ToolCallFormat::kNone.
FamilySyntax ToolCallSyntax(toolcall::ToolCallFormat format, GrammarExpr whitespace);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_TOOL_CALL_SYNTAX_H_
