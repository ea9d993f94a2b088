// The syntax tree of a parsed Jinja template: expressions and statements. Plain data; the
// parser builds it once and the interpreter only reads it (so one tree serves concurrent
// renderings).
#ifndef TANDEM_CORE_CHAT_JINJA_AST_H_
#define TANDEM_CORE_CHAT_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/jinja_lexer.h"
#include "core/chat/jinja_value.h"

namespace tandem::chat::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // [args...]
    kTuple,      // (args...), a list at run time
    kDict,       // {keys[i]: args[i]}: args holds key, value, key, value...
    kUnary,      // name is "-", "+" or "not"; args[0]
    kBinary,     // name is the operator; args[0], args[1]; "and"/"or" short-circuit
    kCompare,    // name is the operator ("==", "in", "not in", ...); args[0], args[1]
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null: undefined)
    kGetAttr,    // args[0].name
    kGetItem,    // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]], missing parts null
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not] name(args[1..]); negated
  };
  Kind kind;
  Position pos;
  Value value;       // kLiteral
  std::string name;  // see above
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches: (condition or null for else, body)
    kFor,          // for targets in expr [if condition]: body [else else_body]
    kSet,          // set targets = expr, or set names[0].attr = expr
    kSetBlock,     // set targets[0] %} body {% endset (filter applied if filter set)
    kMacro,        // macro name(params) body
    kFilterBlock,  // filter filter %} body {% endfilter
    kBreak,
    kContinue,
    kScope,  // a body run in place ({% generation %} and similar no-op wrappers)
  };
  Kind kind;
  Position pos;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;                 // kFor: the loop filter
  ExprPtr filter;                    // kSetBlock/kFilterBlock: filter chain on a kName "_"
  std::vector<std::string> targets;  // kFor, kSet: names to bind
  std::string attr;                  // kSet: namespace attribute (targets[0].attr)
  std::string name;                  // kMacro
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro: name and default (or null)
  std::vector<std::pair<ExprPtr, Body>> branches;       // kIf
  Body body;
  Body else_body;
};

// A parsed template.
struct Program {
  Body body;
};

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_AST_H_
