#include "core/chat/jinja_interpreter.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/chat/jinja_filters.h"
#include "core/chat/jinja_operators.h"

namespace tandem::chat::jinja {
namespace {

// Variables of one scope; lookups fall back to the parent.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}

  const Value* Lookup(absl::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
      auto it = s->vars_.find(name);
      if (it != s->vars_.end()) return &it->second;
    }
    return nullptr;
  }
  void Set(const std::string& name, Value value) { vars_[name] = std::move(value); }

 private:
  std::shared_ptr<Scope> parent_;
  absl::flat_hash_map<std::string, Value> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

// Checks that every filter and test a template names exists (Jinja rejects them at compile
// time, before rendering anything).
absl::Status CheckNames(const Expr& e) {
  if (e.kind == Expr::Kind::kFilter && !IsKnownFilter(e.name)) {
    return ErrorAt(e.pos, absl::StrCat("no filter named '", e.name, "'"));
  }
  if (e.kind == Expr::Kind::kTest && !IsKnownTest(e.name)) {
    return ErrorAt(e.pos, absl::StrCat("no test named '", e.name, "'"));
  }
  for (const ExprPtr& a : e.args) {
    if (a != nullptr) RETURN_IF_ERROR(CheckNames(*a));
  }
  for (const auto& [k, v] : e.kwargs) RETURN_IF_ERROR(CheckNames(*v));
  return absl::OkStatus();
}

absl::Status CheckNames(const Body& body) {
  for (const NodePtr& n : body) {
    for (const Expr* e : {n->expr.get(), n->condition.get(), n->filter.get()}) {
      if (e != nullptr) RETURN_IF_ERROR(CheckNames(*e));
    }
    for (const auto& [name, def] : n->params) {
      if (def != nullptr) RETURN_IF_ERROR(CheckNames(*def));
    }
    for (const auto& [cond, b] : n->branches) {
      if (cond != nullptr) RETURN_IF_ERROR(CheckNames(*cond));
      RETURN_IF_ERROR(CheckNames(b));
    }
    RETURN_IF_ERROR(CheckNames(n->body));
    RETURN_IF_ERROR(CheckNames(n->else_body));
  }
  return absl::OkStatus();
}

class Renderer {
 public:
  explicit Renderer(const RenderOptions& options) : options_(options) {}

  ~Renderer() {
    // namespace() objects may reference each other; clearing them breaks any cycle.
    for (const std::shared_ptr<Dict>& ns : namespaces_) *ns = Dict(true);
  }

  Value MakeNamespace(const CallArgs& args) {
    auto ns = std::make_shared<Dict>(true);
    if (!args.positional.empty() && args.positional[0].is_dict()) {
      for (const auto& [k, v] : args.positional[0].as_dict().items()) ns->Set(k, v);
    }
    for (const auto& [k, v] : args.keyword) ns->Set(k, v);
    namespaces_.push_back(ns);
    return Value(ns);
  }

  absl::Status Exec(const Body& body, const ScopePtr& scope, std::string* out, Flow* flow) {
    for (const NodePtr& node : body) {
      RETURN_IF_ERROR(ExecNode(*node, scope, out, flow));
      if (*flow != Flow::kNormal) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Append(std::string* out, absl::string_view text) {
    if (out->size() + text.size() > options_.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("template output exceeds the limit of ",
                                                       options_.max_output_bytes, " bytes"));
    }
    out->append(text.data(), text.size());
    return absl::OkStatus();
  }

  absl::Status ExecNode(const Node& node, const ScopePtr& scope, std::string* out, Flow* flow) {
    switch (node.kind) {
      case Node::Kind::kText:
        return Append(out, node.text);
      case Node::Kind::kOutput: {
        ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
        return Append(out, ToString(v));
      }
      case Node::Kind::kIf:
        for (const auto& [cond, body] : node.branches) {
          bool take = true;
          if (cond != nullptr) {
            ASSIGN_OR_RETURN(Value c, Eval(*cond, scope));
            take = c.Truthy();
          }
          if (take) return Exec(body, scope, out, flow);
        }
        return absl::OkStatus();
      case Node::Kind::kFor:
        return ExecFor(node, scope, out);
      case Node::Kind::kSet:
        return ExecSet(node, scope);
      case Node::Kind::kSetBlock:
      case Node::Kind::kFilterBlock: {
        std::string text;
        Flow inner = Flow::kNormal;
        auto block_scope = std::make_shared<Scope>(scope);
        RETURN_IF_ERROR(Exec(node.body, block_scope, &text, &inner));
        Value result(std::move(text));
        if (node.filter != nullptr) {
          block_scope->Set("__block__", std::move(result));
          ASSIGN_OR_RETURN(result, Eval(*node.filter, block_scope));
        }
        if (node.kind == Node::Kind::kFilterBlock) return Append(out, ToString(result));
        scope->Set(node.targets[0], std::move(result));
        return absl::OkStatus();
      }
      case Node::Kind::kMacro: {
        std::weak_ptr<Scope> defining = scope;
        const Node* macro = &node;
        scope->Set(node.name, MakeCallable(node.name, [this, macro, defining](const CallArgs& a) {
                     return CallMacro(*macro, defining, a);
                   }));
        return absl::OkStatus();
      }
      case Node::Kind::kBreak:
        *flow = Flow::kBreak;
        return absl::OkStatus();
      case Node::Kind::kContinue:
        *flow = Flow::kContinue;
        return absl::OkStatus();
      case Node::Kind::kScope:
        return Exec(node.body, scope, out, flow);
    }
    return absl::OkStatus();
  }

  absl::Status Bind(const std::vector<std::string>& targets, const Value& item, Scope* scope,
                    Position pos) {
    if (targets.size() == 1) {
      scope->Set(targets[0], item);
      return absl::OkStatus();
    }
    if (!item.is_list()) {
      absl::StatusOr<List> parts = Iterate(item);
      if (!parts.ok()) return AttachPosition(parts.status(), pos);
      return Bind(targets, Value(std::move(*parts)), scope, pos);
    }
    if (item.as_list().size() != targets.size()) {
      return ErrorAt(
          pos, absl::StrCat(item.as_list().size() < targets.size() ? "not enough" : "too many",
                            " values to unpack (expected ", targets.size(), ", got ",
                            item.as_list().size(), ")"));
    }
    for (size_t i = 0; i < targets.size(); ++i) scope->Set(targets[i], item.as_list()[i]);
    return absl::OkStatus();
  }

  absl::Status ExecFor(const Node& node, const ScopePtr& scope, std::string* out) {
    ASSIGN_OR_RETURN(Value iterable, Eval(*node.expr, scope));
    absl::StatusOr<List> all = Iterate(iterable);
    if (!all.ok()) return AttachPosition(all.status(), node.expr->pos);
    List items;
    if (node.condition == nullptr) {
      items = std::move(*all);
    } else {
      for (const Value& item : *all) {
        auto filter_scope = std::make_shared<Scope>(scope);
        RETURN_IF_ERROR(Bind(node.targets, item, filter_scope.get(), node.pos));
        ASSIGN_OR_RETURN(Value keep, Eval(*node.condition, filter_scope));
        if (keep.Truthy()) items.push_back(item);
      }
    }
    Flow flow = Flow::kNormal;
    if (items.empty()) return Exec(node.else_body, scope, out, &flow);
    const int64_t n = static_cast<int64_t>(items.size());
    auto shared_items = std::make_shared<List>(std::move(items));
    for (int64_t i = 0; i < n; ++i) {
      if (++loop_iterations_ > options_.max_loop_iterations) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "template exceeds the limit of ", options_.max_loop_iterations, " loop iterations"));
      }
      const Value& item = (*shared_items)[static_cast<size_t>(i)];
      auto iteration = std::make_shared<Scope>(scope);
      RETURN_IF_ERROR(Bind(node.targets, item, iteration.get(), node.pos));
      iteration->Set("loop", LoopObject(shared_items, i, n));
      flow = Flow::kNormal;
      RETURN_IF_ERROR(Exec(node.body, iteration, out, &flow));
      if (flow == Flow::kBreak) break;
    }
    return absl::OkStatus();
  }

  static Value LoopObject(const std::shared_ptr<List>& items, int64_t i, int64_t n) {
    std::vector<std::pair<std::string, Value>> fields = {
        {"index", Value(i + 1)},    {"index0", Value(i)},
        {"revindex", Value(n - i)}, {"revindex0", Value(n - i - 1)},
        {"first", Value(i == 0)},   {"last", Value(i == n - 1)},
        {"length", Value(n)},       {"depth", Value(1)},
        {"depth0", Value(0)},
    };
    if (i > 0) fields.emplace_back("previtem", (*items)[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) fields.emplace_back("nextitem", (*items)[static_cast<size_t>(i + 1)]);
    fields.emplace_back("cycle",
                        MakeCallable("loop.cycle", [i](const CallArgs& a) -> absl::StatusOr<Value> {
                          if (a.positional.empty())
                            return absl::InvalidArgumentError("no items for cycling given");
                          return a.positional[static_cast<size_t>(i) % a.positional.size()];
                        }));
    return MakeDict(std::move(fields));
  }

  absl::Status ExecSet(const Node& node, const ScopePtr& scope) {
    ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
    if (node.attr.empty()) return Bind(node.targets, v, scope.get(), node.pos);
    const Value* target = scope->Lookup(node.targets[0]);
    if (target == nullptr || !target->is_dict() || !target->as_dict().is_namespace()) {
      return ErrorAt(node.pos, absl::StrCat("cannot assign attribute on non-namespace object '",
                                            node.targets[0], "'"));
    }
    if (v.is_namespace() || v.holds_namespace()) {
      return AttachPosition(NamespaceInsideError(), node.pos);
    }
    target->as_dict().Set(node.attr, std::move(v));
    if (target->weight() > options_.max_value_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("namespace '", node.targets[0],
                                                       "' exceeds the limit of ",
                                                       options_.max_value_bytes, " bytes"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Value> CallMacro(const Node& macro, const std::weak_ptr<Scope>& defining,
                                  const CallArgs& args) {
    ScopePtr parent = defining.lock();
    if (parent == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("macro '", macro.name, "' called after its scope ended"));
    }
    if (args.positional.size() > macro.params.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "macro '", macro.name, "' takes not more than ", macro.params.size(), " argument(s)"));
    }
    auto scope = std::make_shared<Scope>(parent);
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const auto& [name, default_value] = macro.params[i];
      const Value* given = args.Get(i, name);
      if (given != nullptr) {
        scope->Set(name, *given);
      } else if (default_value != nullptr) {
        ASSIGN_OR_RETURN(Value v, Eval(*default_value, scope));
        scope->Set(name, std::move(v));
      } else {
        scope->Set(name, Value::Undefined(absl::StrCat("'", name, "' is undefined")));
      }
    }
    for (const auto& [key, value] : args.keyword) {
      bool known = false;
      for (const auto& p : macro.params) known = known || p.first == key;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("macro '", macro.name, "' has no argument named '", key, "'"));
      }
    }
    std::string text;
    Flow flow = Flow::kNormal;
    RETURN_IF_ERROR(Exec(macro.body, scope, &text, &flow));
    return Value(std::move(text));
  }

  absl::StatusOr<Value> Eval(const Expr& e, const ScopePtr& scope) {
    absl::StatusOr<Value> v = EvalInner(e, scope);
    if (v.ok() && MakesValues(e.kind)) v = CheckValueLimits(*std::move(v));
    if (!v.ok()) return AttachPosition(v.status(), e.pos);
    return v;
  }

  // Whether an expression of this kind may make a new value (a name, attribute or item
  // gives one that exists already; comparisons and tests give booleans).
  static bool MakesValues(Expr::Kind kind) {
    switch (kind) {
      case Expr::Kind::kList:
      case Expr::Kind::kTuple:
      case Expr::Kind::kDict:
      case Expr::Kind::kUnary:
      case Expr::Kind::kBinary:
      case Expr::Kind::kSlice:
      case Expr::Kind::kCall:
      case Expr::Kind::kFilter:
        return true;
      default:
        return false;
    }
  }

  static absl::Status NamespaceInsideError() {
    return absl::InvalidArgumentError(
        "a namespace() object cannot be put in a list, a dict or a namespace");
  }

  // Every value an expression makes stays within the size and depth limits, and no list or
  // dict holds a namespace (the one mutable value): so a value's weight never changes after
  // it is made, and no value contains itself.
  absl::StatusOr<Value> CheckValueLimits(Value v) {
    computed_bytes_ = computed_bytes_ > UINT64_MAX - v.weight() ? UINT64_MAX
                                                                : computed_bytes_ + v.weight();
    if (computed_bytes_ > options_.max_computed_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("template computes more than the limit of ", options_.max_computed_bytes,
                       " bytes of values"));
    }
    if (v.weight() > options_.max_value_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "template value exceeds the limit of ", options_.max_value_bytes, " bytes"));
    }
    if (v.depth() > options_.max_value_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "template value nests deeper than the limit of ", options_.max_value_depth, " levels"));
    }
    if (v.holds_namespace()) return NamespaceInsideError();
    return v;
  }

  absl::StatusOr<CallArgs> EvalArgs(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, Eval(*e.args[i], scope));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.kwargs) {
      ASSIGN_OR_RETURN(Value v, Eval(*expr, scope));
      args.keyword.emplace_back(key, std::move(v));
    }
    return args;
  }

  absl::StatusOr<Value> EvalInner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName: {
        const Value* v = scope->Lookup(e.name);
        if (v != nullptr) return *v;
        return Value::Undefined(absl::StrCat("'", e.name, "' is undefined"));
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ASSIGN_OR_RETURN(CallArgs items, EvalArgs(e, 0, scope));
        if (e.kind == Expr::Kind::kTuple) return Value::Tuple(std::move(items.positional));
        return Value(std::move(items.positional));
      }
      case Expr::Kind::kDict: {
        auto dict = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          ASSIGN_OR_RETURN(Value key, Eval(*e.args[i], scope));
          if (!key.is_string()) {
            return ErrorAt(e.args[i]->pos, "dict literal keys must be strings");
          }
          ASSIGN_OR_RETURN(Value value, Eval(*e.args[i + 1], scope));
          dict->Set(key.as_string(), std::move(value));
        }
        return Value(std::move(dict));
      }
      case Expr::Kind::kUnary: {
        ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
        if (e.name == "not") return Value(!v.Truthy());
        return UnaryOp(e.name, v);
      }
      case Expr::Kind::kBinary: {
        ASSIGN_OR_RETURN(Value lhs, Eval(*e.args[0], scope));
        if (e.name == "and") return lhs.Truthy() ? Eval(*e.args[1], scope) : lhs;
        if (e.name == "or") return lhs.Truthy() ? lhs : Eval(*e.args[1], scope);
        ASSIGN_OR_RETURN(Value rhs, Eval(*e.args[1], scope));
        return BinaryOp(e.name, lhs, rhs);
      }
      case Expr::Kind::kCompare:
        return EvalCompare(e, scope);
      case Expr::Kind::kCondition: {
        ASSIGN_OR_RETURN(Value c, Eval(*e.args[0], scope));
        if (c.Truthy()) return Eval(*e.args[1], scope);
        if (e.args[2] == nullptr) return Value::Undefined("conditional expression had no else");
        return Eval(*e.args[2], scope);
      }
      case Expr::Kind::kGetAttr: {
        ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
        if (obj.is_undefined()) return UndefinedError(obj);
        return GetAttribute(obj, e.name);
      }
      case Expr::Kind::kGetItem: {
        ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
        if (obj.is_undefined()) return UndefinedError(obj);
        ASSIGN_OR_RETURN(Value key, Eval(*e.args[1], scope));
        return GetItem(obj, key);
      }
      case Expr::Kind::kSlice: {
        ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.args[i + 1] != nullptr) {
            ASSIGN_OR_RETURN(parts[i], Eval(*e.args[i + 1], scope));
          }
        }
        auto part = [&](int i) { return e.args[i + 1] != nullptr ? &parts[i] : nullptr; };
        return Slice(obj, part(0), part(1), part(2));
      }
      case Expr::Kind::kCall:
        return EvalCall(e, scope);
      case Expr::Kind::kFilter: {
        ASSIGN_OR_RETURN(Value input, Eval(*e.args[0], scope));
        ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
        return ApplyFilter(e.name, input, args);
      }
      case Expr::Kind::kTest: {
        ASSIGN_OR_RETURN(Value input, Eval(*e.args[0], scope));
        ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
        ASSIGN_OR_RETURN(bool result, ApplyTest(e.name, input, args));
        return Value(result != e.negated);
      }
    }
    return absl::InternalError("unknown expression kind");
  }

  absl::StatusOr<Value> EvalCompare(const Expr& e, const ScopePtr& scope) {
    ASSIGN_OR_RETURN(Value a, Eval(*e.args[0], scope));
    ASSIGN_OR_RETURN(Value b, Eval(*e.args[1], scope));
    const std::string& op = e.name;
    if (op == "==") return Value(Equals(a, b));
    if (op == "!=") return Value(!Equals(a, b));
    if (op == "in" || op == "not in") {
      ASSIGN_OR_RETURN(bool in, Contains(b, a));
      return Value(in == (op == "in"));
    }
    if (a.is_undefined()) return UndefinedError(a);
    if (b.is_undefined()) return UndefinedError(b);
    absl::StatusOr<int> c = Compare(a, b);
    if (!c.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", op, "' not supported between '",
                                                     TypeName(a), "' and '", TypeName(b), "'"));
    }
    if (op == "<") return Value(*c < 0);
    if (op == "<=") return Value(*c <= 0);
    if (op == ">") return Value(*c > 0);
    return Value(*c >= 0);
  }

  absl::StatusOr<Value> EvalCall(const Expr& e, const ScopePtr& scope) {
    ASSIGN_OR_RETURN(Value callee, Eval(*e.args[0], scope));
    if (callee.is_undefined()) return UndefinedError(callee);
    if (!callee.is_callable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", TypeName(callee), "' object is not callable"));
    }
    ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
    if (call_depth_ >= options_.max_call_depth) {
      return absl::ResourceExhaustedError(
          absl::StrCat("template exceeds the limit of ", options_.max_call_depth, " nested calls"));
    }
    ++call_depth_;
    absl::StatusOr<Value> result = callee.as_callable().fn(args);
    --call_depth_;
    return result;
  }

  const RenderOptions& options_;
  std::vector<std::shared_ptr<Dict>> namespaces_;
  int call_depth_ = 0;
  uint64_t computed_bytes_ = 0;
  int64_t loop_iterations_ = 0;
};

absl::StatusOr<Value> Range(const CallArgs& a) {
  int64_t bounds[3] = {0, 0, 1};
  size_t n = a.positional.size();
  if (n == 0 || n > 3) return absl::InvalidArgumentError("range expects 1 to 3 integers");
  for (size_t i = 0; i < n; ++i) {
    if (!a.positional[i].is_int() && !a.positional[i].is_bool()) {
      return absl::InvalidArgumentError("range expects integers");
    }
  }
  if (n == 1) {
    bounds[1] = a.positional[0].as_int();
  } else {
    for (size_t i = 0; i < n; ++i) bounds[i] = a.positional[i].as_int();
  }
  if (bounds[2] == 0) return absl::InvalidArgumentError("range() step must not be zero");
  List out;
  for (int64_t i = bounds[0]; bounds[2] > 0 ? i < bounds[1] : i > bounds[1];) {
    if (out.size() >= 100000) {
      return absl::ResourceExhaustedError("range() with more than 100000 items");
    }
    out.push_back(Value(i));
    // A step past INT64_MAX/MIN is also past the stop bound: the range ends there.
    if (__builtin_add_overflow(i, bounds[2], &i)) break;
  }
  return Value(std::move(out));
}

}  // namespace

absl::StatusOr<Template> Template::Parse(absl::string_view source, const ParserOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Program> program, ParseTemplate(source, options));
  RETURN_IF_ERROR(CheckNames(program->body));
  return Template(std::shared_ptr<const Program>(std::move(program)));
}

absl::StatusOr<std::string> Template::Render(
    const std::vector<std::pair<std::string, Value>>& globals, const RenderOptions& options) const {
  Renderer renderer(options);
  auto builtins = std::make_shared<Scope>(nullptr);
  builtins->Set("range", MakeCallable("range", Range));
  builtins->Set("namespace", MakeCallable("namespace", [&renderer](const CallArgs& a) {
                  return absl::StatusOr<Value>(renderer.MakeNamespace(a));
                }));
  builtins->Set("dict", MakeCallable("dict", [](const CallArgs& a) -> absl::StatusOr<Value> {
                  return MakeDict(a.keyword);
                }));
  auto context = std::make_shared<Scope>(builtins);
  for (const auto& [name, value] : globals) context->Set(name, value);
  auto top = std::make_shared<Scope>(context);
  std::string out;
  Flow flow = Flow::kNormal;
  RETURN_IF_ERROR(renderer.Exec(program_->body, top, &out, &flow));
  return out;
}

}  // namespace tandem::chat::jinja
