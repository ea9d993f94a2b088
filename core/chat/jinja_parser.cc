#include "core/chat/jinja_parser.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"

namespace tandem::chat::jinja {
namespace {

using Type = Token::Type;

std::string Describe(const Token& t) {
  switch (t.type) {
    case Type::kText:
      return "text";
    case Type::kVarBegin:
      return "'{{'";
    case Type::kVarEnd:
      return "'}}'";
    case Type::kBlockBegin:
      return "'{%'";
    case Type::kBlockEnd:
      return "'%}'";
    case Type::kName:
      return absl::StrCat("'", t.text, "'");
    case Type::kString:
      return "a string";
    case Type::kInt:
    case Type::kFloat:
      return absl::StrCat("'", t.text, "'");
    case Type::kOperator:
      return absl::StrCat("'", t.text, "'");
    case Type::kEof:
      return "end of template";
  }
  return "token";
}

ExprPtr NewExpr(Expr::Kind kind, Position pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

ExprPtr NewBinary(Expr::Kind kind, std::string op, ExprPtr lhs, ExprPtr rhs, Position pos) {
  ExprPtr e = NewExpr(kind, pos);
  e->name = std::move(op);
  e->args.push_back(std::move(lhs));
  e->args.push_back(std::move(rhs));
  return e;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParserOptions& options)
      : tokens_(std::move(tokens)), options_(options) {}

  absl::StatusOr<std::unique_ptr<Program>> Run() {
    auto program = std::make_unique<Program>();
    std::string found;
    ASSIGN_OR_RETURN(program->body, ParseBody({}, &found));
    return program;
  }

 private:
  // ----- token helpers
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsOp(absl::string_view op, size_t ahead = 0) const {
    return Peek(ahead).type == Type::kOperator && Peek(ahead).text == op;
  }
  bool IsName(absl::string_view name, size_t ahead = 0) const {
    return Peek(ahead).type == Type::kName && Peek(ahead).text == name;
  }
  absl::Status Unexpected(absl::string_view expected) const {
    return ErrorAt(Peek().pos, absl::StrCat("expected ", expected, ", found ", Describe(Peek())));
  }
  absl::Status ExpectOp(absl::string_view op) {
    if (!IsOp(op)) return Unexpected(absl::StrCat("'", op, "'"));
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectBlockEnd() {
    if (Peek().type != Type::kBlockEnd) return Unexpected("'%}'");
    Next();
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ExpectName(absl::string_view what) {
    if (Peek().type != Type::kName) return Unexpected(what);
    return Next().text;
  }

  // Tracks nesting for the depth limit.
  class DepthGuard {
   public:
    explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
    ~DepthGuard() { --*depth_; }

   private:
    int* depth_;
  };
  absl::Status CheckDepth() const {
    if (depth_ > options_.max_depth) {
      return ErrorAt(Peek().pos,
                     absl::StrCat("nesting deeper than ", options_.max_depth, " levels"));
    }
    return absl::OkStatus();
  }
  // Each link of a left-deep chain (a + b + c, x.y.z, v | f | g) is one more level of the
  // tree that checking, evaluating and freeing recurse through, so it counts as nesting.
  class ChainGuard {
   public:
    explicit ChainGuard(Parser* parser) : parser_(parser) {}
    ~ChainGuard() { parser_->depth_ -= links_; }
    absl::Status Link() {
      ++links_;
      ++parser_->depth_;
      return parser_->CheckDepth();
    }

   private:
    Parser* parser_;
    int links_ = 0;
  };

  // ----- statements

  // Parses nodes until a block tag named in `terminators`; consumes "{% name" and stores the
  // name in *found. At the top level (no terminators) parses to the end.
  absl::StatusOr<Body> ParseBody(std::vector<std::string> terminators, std::string* found) {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    Body body;
    while (true) {
      const Token& t = Peek();
      if (t.type == Type::kEof) {
        if (terminators.empty()) return body;
        return ErrorAt(t.pos, absl::StrCat("unexpected end of template, expected {% ",
                                           absl::StrJoin(terminators, " %} or {% "), " %}"));
      }
      if (t.type == Type::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->pos = t.pos;
        node->text = Next().text;
        body.push_back(std::move(node));
        continue;
      }
      if (t.type == Type::kVarBegin) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->pos = Next().pos;
        ASSIGN_OR_RETURN(node->expr, ParseExpression());
        if (Peek().type != Type::kVarEnd) return Unexpected("'}}'");
        Next();
        body.push_back(std::move(node));
        continue;
      }
      if (t.type != Type::kBlockBegin) return Unexpected("text, '{{' or '{%'");
      const Token& tag = Peek(1);
      if (tag.type != Type::kName) {
        Next();
        return Unexpected("a tag name");
      }
      for (const std::string& end : terminators) {
        if (tag.text == end) {
          Next();
          *found = Next().text;
          return body;
        }
      }
      Next();
      ASSIGN_OR_RETURN(NodePtr node, ParseStatement());
      body.push_back(std::move(node));
    }
  }

  absl::StatusOr<NodePtr> ParseStatement() {
    const Token& tag = Next();
    auto node = std::make_unique<Node>();
    node->pos = tag.pos;
    const std::string& name = tag.text;
    if (name == "if") return ParseIf(std::move(node));
    if (name == "for") return ParseFor(std::move(node));
    if (name == "set") return ParseSet(std::move(node));
    if (name == "macro") return ParseMacro(std::move(node));
    if (name == "filter") {
      node->kind = Node::Kind::kFilterBlock;
      // {% filter a(args) | b %}: the first filter has no leading '|'.
      ExprPtr first = NewExpr(Expr::Kind::kFilter, Peek().pos);
      ASSIGN_OR_RETURN(first->name, ExpectName("a filter name"));
      first->args.push_back(BlockPlaceholder(tag.pos));
      if (IsOp("(")) RETURN_IF_ERROR(ParseCallArgs(first.get()));
      ASSIGN_OR_RETURN(node->filter, ParseFilterChain(std::move(first)));
      RETURN_IF_ERROR(ExpectBlockEnd());
      std::string found;
      ASSIGN_OR_RETURN(node->body, ParseBody({"endfilter"}, &found));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) {
        return ErrorAt(tag.pos, absl::StrCat("'", name, "' outside of a loop"));
      }
      node->kind = name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "generation") {
      node->kind = Node::Kind::kScope;
      RETURN_IF_ERROR(ExpectBlockEnd());
      std::string found;
      ASSIGN_OR_RETURN(node->body, ParseBody({"endgeneration"}, &found));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    static const char* kUnsupported[] = {"include", "import", "from", "extends",    "block",
                                         "call",    "with",   "do",   "autoescape", "trans"};
    for (const char* u : kUnsupported) {
      if (name == u) return ErrorAt(tag.pos, absl::StrCat("unsupported tag '", name, "'"));
    }
    return ErrorAt(tag.pos, absl::StrCat("unknown tag '", name, "'"));
  }

  absl::StatusOr<NodePtr> ParseIf(NodePtr node) {
    node->kind = Node::Kind::kIf;
    std::string found = "if";
    while (found == "if" || found == "elif") {
      ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression());
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(Body body, ParseBody({"elif", "else", "endif"}, &found));
      node->branches.emplace_back(std::move(cond), std::move(body));
    }
    if (found == "else") {
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(Body body, ParseBody({"endif"}, &found));
      node->branches.emplace_back(nullptr, std::move(body));
    }
    RETURN_IF_ERROR(ExpectBlockEnd());
    return node;
  }

  // `a`, `a, b` or `(a, b)`.
  absl::StatusOr<std::vector<std::string>> ParseTargets() {
    bool paren = IsOp("(");
    if (paren) Next();
    std::vector<std::string> names;
    do {
      ASSIGN_OR_RETURN(std::string n, ExpectName("a variable name"));
      names.push_back(std::move(n));
    } while (IsOp(",") && (Next(), true));
    if (paren) RETURN_IF_ERROR(ExpectOp(")"));
    return names;
  }

  absl::StatusOr<NodePtr> ParseFor(NodePtr node) {
    node->kind = Node::Kind::kFor;
    ASSIGN_OR_RETURN(node->targets, ParseTargets());
    if (!IsName("in")) return Unexpected("'in'");
    Next();
    ASSIGN_OR_RETURN(node->expr, ParseOr());
    if (IsName("if")) {
      Next();
      ASSIGN_OR_RETURN(node->condition, ParseExpression());
    }
    if (IsName("recursive")) return ErrorAt(Peek().pos, "recursive loops are not supported");
    RETURN_IF_ERROR(ExpectBlockEnd());
    std::string found;
    ++loop_depth_;
    absl::StatusOr<Body> body = ParseBody({"else", "endfor"}, &found);
    --loop_depth_;
    if (!body.ok()) return body.status();
    node->body = std::move(*body);
    if (found == "else") {
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(node->else_body, ParseBody({"endfor"}, &found));
    }
    RETURN_IF_ERROR(ExpectBlockEnd());
    return node;
  }

  absl::StatusOr<NodePtr> ParseSet(NodePtr node) {
    node->kind = Node::Kind::kSet;
    if (Peek().type == Type::kName && IsOp(".", 1)) {
      node->targets.push_back(Next().text);
      Next();
      ASSIGN_OR_RETURN(node->attr, ExpectName("an attribute name"));
    } else {
      ASSIGN_OR_RETURN(node->targets, ParseTargets());
    }
    if (IsOp("=")) {
      Next();
      ASSIGN_OR_RETURN(node->expr, ParseTupleOrExpression());
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (!node->attr.empty() || node->targets.size() != 1) return Unexpected("'='");
    node->kind = Node::Kind::kSetBlock;
    if (IsOp("|")) {
      ASSIGN_OR_RETURN(node->filter, ParseFilterChain(BlockPlaceholder(Peek().pos)));
    }
    RETURN_IF_ERROR(ExpectBlockEnd());
    std::string found;
    ASSIGN_OR_RETURN(node->body, ParseBody({"endset"}, &found));
    RETURN_IF_ERROR(ExpectBlockEnd());
    return node;
  }

  absl::StatusOr<NodePtr> ParseMacro(NodePtr node) {
    node->kind = Node::Kind::kMacro;
    ASSIGN_OR_RETURN(node->name, ExpectName("a macro name"));
    RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      ASSIGN_OR_RETURN(std::string param, ExpectName("a parameter name"));
      ExprPtr default_value;
      if (IsOp("=")) {
        Next();
        ASSIGN_OR_RETURN(default_value, ParseExpression());
      }
      node->params.emplace_back(std::move(param), std::move(default_value));
      if (!IsOp(",")) break;
      Next();
    }
    RETURN_IF_ERROR(ExpectOp(")"));
    RETURN_IF_ERROR(ExpectBlockEnd());
    std::string found;
    int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot cross a macro boundary
    absl::StatusOr<Body> body = ParseBody({"endmacro"}, &found);
    loop_depth_ = saved_loop_depth;
    if (!body.ok()) return body.status();
    node->body = std::move(*body);
    if (Peek().type == Type::kName) Next();  // {% endmacro name %}
    RETURN_IF_ERROR(ExpectBlockEnd());
    return node;
  }

  // ----- expressions

  static ExprPtr BlockPlaceholder(Position pos) {
    ExprPtr e = NewExpr(Expr::Kind::kName, pos);
    e->name = "__block__";
    return e;
  }

  // `a, b, c` without parentheses becomes a tuple (as after `set x =`).
  absl::StatusOr<ExprPtr> ParseTupleOrExpression() {
    Position pos = Peek().pos;
    ASSIGN_OR_RETURN(ExprPtr first, ParseExpression());
    if (!IsOp(",")) return first;
    ExprPtr tuple = NewExpr(Expr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (Peek().type == Type::kBlockEnd) break;
      ASSIGN_OR_RETURN(ExprPtr e, ParseExpression());
      tuple->args.push_back(std::move(e));
    }
    return tuple;
  }

  absl::StatusOr<ExprPtr> ParseExpression() {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    ChainGuard chain(this);
    while (IsName("if")) {
      RETURN_IF_ERROR(chain.Link());
      Position pos = Next().pos;
      ExprPtr cond_expr = NewExpr(Expr::Kind::kCondition, pos);
      ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        ASSIGN_OR_RETURN(otherwise, ParseExpression());
      }
      cond_expr->args.push_back(std::move(cond));
      cond_expr->args.push_back(std::move(expr));
      cond_expr->args.push_back(std::move(otherwise));
      expr = std::move(cond_expr);
    }
    return expr;
  }

  absl::StatusOr<ExprPtr> ParseOr() {
    ASSIGN_OR_RETURN(ExprPtr lhs, ParseAnd());
    ChainGuard chain(this);
    while (IsName("or")) {
      RETURN_IF_ERROR(chain.Link());
      Position pos = Next().pos;
      ASSIGN_OR_RETURN(ExprPtr rhs, ParseAnd());
      lhs = NewBinary(Expr::Kind::kBinary, "or", std::move(lhs), std::move(rhs), pos);
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseAnd() {
    ASSIGN_OR_RETURN(ExprPtr lhs, ParseNot());
    ChainGuard chain(this);
    while (IsName("and")) {
      RETURN_IF_ERROR(chain.Link());
      Position pos = Next().pos;
      ASSIGN_OR_RETURN(ExprPtr rhs, ParseNot());
      lhs = NewBinary(Expr::Kind::kBinary, "and", std::move(lhs), std::move(rhs), pos);
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(&depth_);
      RETURN_IF_ERROR(CheckDepth());
      ExprPtr e = NewExpr(Expr::Kind::kUnary, Next().pos);
      e->name = "not";
      ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      e->args.push_back(std::move(operand));
      return e;
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprPtr> ParseCompare() {
    ASSIGN_OR_RETURN(ExprPtr lhs, ParseMath1());
    ExprPtr result;
    ChainGuard chain(this);
    while (true) {
      std::string op;
      Position pos = Peek().pos;
      if (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp("<=") || IsOp(">") || IsOp(">=")) {
        op = Next().text;
      } else if (IsName("in")) {
        Next();
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        op = "not in";
      } else {
        break;
      }
      RETURN_IF_ERROR(chain.Link());
      ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath1());
      // A chain a < b < c means (a < b) and (b < c); the middle operand is evaluated twice.
      ExprPtr next_lhs = CloneForChain(*rhs);
      ExprPtr cmp = NewBinary(Expr::Kind::kCompare, op, std::move(lhs), std::move(rhs), pos);
      result = result == nullptr
                   ? std::move(cmp)
                   : NewBinary(Expr::Kind::kBinary, "and", std::move(result), std::move(cmp), pos);
      lhs = std::move(next_lhs);
    }
    return result != nullptr ? std::move(result) : std::move(lhs);
  }

  static ExprPtr CloneForChain(const Expr& e) {
    ExprPtr c = NewExpr(e.kind, e.pos);
    c->value = e.value;
    c->name = e.name;
    c->negated = e.negated;
    for (const ExprPtr& a : e.args) c->args.push_back(a ? CloneForChain(*a) : nullptr);
    for (const auto& [k, v] : e.kwargs) c->kwargs.emplace_back(k, CloneForChain(*v));
    return c;
  }

  absl::StatusOr<ExprPtr> ParseBinaryLevel(const std::vector<absl::string_view>& ops,
                                           absl::StatusOr<ExprPtr> (Parser::*operand)()) {
    ASSIGN_OR_RETURN(ExprPtr lhs, (this->*operand)());
    ChainGuard chain(this);
    while (true) {
      bool matched = false;
      for (absl::string_view op : ops) {
        if (IsOp(op)) {
          RETURN_IF_ERROR(chain.Link());
          Position pos = Next().pos;
          ASSIGN_OR_RETURN(ExprPtr rhs, (this->*operand)());
          lhs =
              NewBinary(Expr::Kind::kBinary, std::string(op), std::move(lhs), std::move(rhs), pos);
          matched = true;
          break;
        }
      }
      if (!matched) return lhs;
    }
  }

  absl::StatusOr<ExprPtr> ParseMath1() {
    return ParseBinaryLevel({"+", "-"}, &Parser::ParseConcat);
  }
  absl::StatusOr<ExprPtr> ParseConcat() { return ParseBinaryLevel({"~"}, &Parser::ParseMath2); }
  absl::StatusOr<ExprPtr> ParseMath2() {
    return ParseBinaryLevel({"*", "/", "//", "%"}, &Parser::ParsePow);
  }
  absl::StatusOr<ExprPtr> ParsePow() {
    return ParseBinaryLevel({"**"}, &Parser::ParseUnaryWithFilter);
  }
  absl::StatusOr<ExprPtr> ParseUnaryWithFilter() { return ParseUnary(true); }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = NewExpr(Expr::Kind::kUnary, Peek().pos);
      node->name = Next().text;
      ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      node->args.push_back(std::move(operand));
    } else {
      ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) return ParseFilterChain(std::move(node));
    return node;
  }

  absl::StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    Position pos = t.pos;
    switch (t.type) {
      case Type::kName: {
        Next();
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, pos);
        if (t.text == "true" || t.text == "True") {
          e->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case Type::kString: {
        std::string s;
        while (Peek().type == Type::kString) s += Next().text;  // adjacent literals join
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, pos);
        e->value = Value(std::move(s));
        return e;
      }
      case Type::kInt:
      case Type::kFloat: {
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, pos);
        e->value = t.type == Type::kInt ? Value(t.int_value) : Value(t.float_value);
        Next();
        return e;
      }
      case Type::kOperator:
        if (t.text == "(") return ParseParenthesized();
        if (t.text == "[") return ParseSequence(Expr::Kind::kList, "]");
        if (t.text == "{") return ParseDictLiteral();
        break;
      default:
        break;
    }
    return Unexpected("an expression");
  }

  absl::StatusOr<ExprPtr> ParseParenthesized() {
    Position pos = Next().pos;  // (
    if (IsOp(")")) {
      Next();
      return NewExpr(Expr::Kind::kTuple, pos);
    }
    ASSIGN_OR_RETURN(ExprPtr first, ParseExpression());
    if (IsOp(")")) {
      Next();
      return first;
    }
    ExprPtr tuple = NewExpr(Expr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (IsOp(")")) break;
      ASSIGN_OR_RETURN(ExprPtr e, ParseExpression());
      tuple->args.push_back(std::move(e));
    }
    RETURN_IF_ERROR(ExpectOp(")"));
    return tuple;
  }

  absl::StatusOr<ExprPtr> ParseSequence(Expr::Kind kind, absl::string_view close) {
    ExprPtr e = NewExpr(kind, Next().pos);
    while (!IsOp(close)) {
      ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      e->args.push_back(std::move(item));
      if (!IsOp(",")) break;
      Next();
    }
    RETURN_IF_ERROR(ExpectOp(close));
    return e;
  }

  absl::StatusOr<ExprPtr> ParseDictLiteral() {
    ExprPtr e = NewExpr(Expr::Kind::kDict, Next().pos);
    while (!IsOp("}")) {
      ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
      RETURN_IF_ERROR(ExpectOp(":"));
      ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      e->args.push_back(std::move(key));
      e->args.push_back(std::move(value));
      if (!IsOp(",")) break;
      Next();
    }
    RETURN_IF_ERROR(ExpectOp("}"));
    return e;
  }

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    ChainGuard chain(this);
    while (true) {
      if (IsOp(".") || IsOp("[") || IsOp("(")) RETURN_IF_ERROR(chain.Link());
      if (IsOp(".")) {
        Position pos = Next().pos;
        if (Peek().type == Type::kInt) {
          ExprPtr index = NewExpr(Expr::Kind::kLiteral, Peek().pos);
          index->value = Value(Next().int_value);
          node = NewBinary(Expr::Kind::kGetItem, "", std::move(node), std::move(index), pos);
          continue;
        }
        ExprPtr e = NewExpr(Expr::Kind::kGetAttr, pos);
        ASSIGN_OR_RETURN(e->name, ExpectName("an attribute name"));
        e->args.push_back(std::move(node));
        node = std::move(e);
      } else if (IsOp("[")) {
        ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
      } else if (IsOp("(")) {
        ExprPtr call = NewExpr(Expr::Kind::kCall, node->pos);
        call->args.push_back(std::move(node));
        RETURN_IF_ERROR(ParseCallArgs(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr target) {
    Position pos = Next().pos;  // [
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (true) {
      if (!IsOp(":") && !IsOp("]")) {
        ASSIGN_OR_RETURN(parts[part], ParseExpression());
      }
      if (IsOp(":") && part < 2) {
        Next();
        is_slice = true;
        ++part;
        continue;
      }
      break;
    }
    RETURN_IF_ERROR(ExpectOp("]"));
    if (!is_slice) {
      if (parts[0] == nullptr) return ErrorAt(pos, "empty subscript");
      return NewBinary(Expr::Kind::kGetItem, "", std::move(target), std::move(parts[0]), pos);
    }
    ExprPtr slice = NewExpr(Expr::Kind::kSlice, pos);
    slice->args.push_back(std::move(target));
    for (ExprPtr& p : parts) slice->args.push_back(std::move(p));
    return slice;
  }

  // At '(' : positional and keyword arguments into e->args (after what is there) and kwargs.
  absl::Status ParseCallArgs(Expr* e) {
    RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (IsOp("*") || IsOp("**"))
        return ErrorAt(Peek().pos, "*args and **kwargs are not supported");
      if (Peek().type == Type::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        Next();
        ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!e->kwargs.empty()) {
          return ErrorAt(Peek().pos, "positional argument follows keyword argument");
        }
        ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->args.push_back(std::move(value));
      }
      if (!IsOp(",")) break;
      Next();
    }
    return ExpectOp(")");
  }

  // Filters (`| name(args)`) and tests (`is [not] name args`) applied to `node`.
  absl::StatusOr<ExprPtr> ParseFilterChain(ExprPtr node) {
    ChainGuard chain(this);
    while (true) {
      if (IsOp("|") || IsName("is")) RETURN_IF_ERROR(chain.Link());
      if (IsOp("|")) {
        Next();
        ExprPtr f = NewExpr(Expr::Kind::kFilter, Peek().pos);
        ASSIGN_OR_RETURN(f->name, ExpectName("a filter name"));
        f->args.push_back(std::move(node));
        if (IsOp("(")) RETURN_IF_ERROR(ParseCallArgs(f.get()));
        node = std::move(f);
      } else if (IsName("is")) {
        Next();
        ExprPtr t = NewExpr(Expr::Kind::kTest, Peek().pos);
        if (IsName("not")) {
          Next();
          t->negated = true;
        }
        t->pos = Peek().pos;
        ASSIGN_OR_RETURN(t->name, ExpectName("a test name"));
        t->args.push_back(std::move(node));
        if (IsOp("(")) {
          RETURN_IF_ERROR(ParseCallArgs(t.get()));
        } else if (StartsTestArgument()) {
          ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
          t->args.push_back(std::move(arg));
        }
        node = std::move(t);
      } else {
        return node;
      }
    }
  }

  bool StartsTestArgument() const {
    const Token& t = Peek();
    if (t.type == Type::kName) {
      return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" &&
             t.text != "is" && t.text != "in" && t.text != "not";
    }
    return t.type == Type::kString || t.type == Type::kInt || t.type == Type::kFloat || IsOp("[") ||
           IsOp("{");
  }

  std::vector<Token> tokens_;
  const ParserOptions& options_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Program>> ParseTemplate(absl::string_view source,
                                                       const ParserOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source, options.lexer));
  return Parser(std::move(tokens), options).Run();
}

}  // namespace tandem::chat::jinja
