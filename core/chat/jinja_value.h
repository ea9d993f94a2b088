// The values a chat template computes with: Python's data model as Jinja exposes it.
//
// undefined (Jinja's default Undefined: falsy, renders empty, remembers why for errors),
// none, bool, int (int64), float (double), str (UTF-8), list, dict (string keys, insertion
// order), and callables (globals, filters-as-functions, bound methods, macros). Lists and dicts
// are shared by reference as in Python; templates run in an immutable sandbox, so only
// namespace() objects are ever mutated after construction.
//
// Not thread-safe: a Value graph belongs to one rendering.
#ifndef TANDEM_CORE_CHAT_JINJA_VALUE_H_
#define TANDEM_CORE_CHAT_JINJA_VALUE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"

namespace tandem::chat::jinja {

class Value;
class Dict;
struct Callable;
using List = std::vector<Value>;

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, else nullptr.
  const Value* Get(size_t index, absl::string_view name) const;
};

// The weight (see Value::weight) of one scalar or container, about the memory it takes.
inline constexpr uint64_t kValueNodeWeight = 16;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() = default;  // undefined
  // `message` says why, for errors when the value is used: "'foo' is undefined".
  static Value Undefined(std::string message) {
    Value v;
    v.string_ = std::move(message);
    return v;
  }
  static Value None() { return Value(Kind::kNone); }
  // A string marked safe (Jinja's Markup, made by the `safe` filter): `+` with a plain string
  // HTML-escapes the plain one, as Jinja does even without autoescape.
  static Value Markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  Value(bool b) : kind_(Kind::kBool), int_(b) {}       // NOLINT: implicit by design
  Value(int64_t i) : kind_(Kind::kInt), int_(i) {}     // NOLINT
  Value(int i) : kind_(Kind::kInt), int_(i) {}         // NOLINT
  Value(double d) : kind_(Kind::kFloat), float_(d) {}  // NOLINT
  Value(std::string s)  // NOLINT
      : kind_(Kind::kString), weight_(kValueNodeWeight + s.size()), string_(std::move(s)) {}
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  Value(List list);                                                      // NOLINT
  // A tuple: a list that prints as (a, b) and is never equal to a list.
  static Value Tuple(List items) {
    Value v(std::move(items));
    v.tuple_ = true;
    return v;
  }
  Value(std::shared_ptr<Dict> dict);          // NOLINT
  Value(std::shared_ptr<Callable> callable);  // NOLINT

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python's numbers include bool.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_markup() const { return markup_; }
  bool is_tuple() const { return tuple_; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // bool or int
  double as_float() const { return is_float() ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return string_; }
  const List& as_list() const { return *list_; }
  const std::shared_ptr<List>& list_ptr() const { return list_; }
  Dict& as_dict() const { return *dict_; }
  const std::shared_ptr<Dict>& dict_ptr() const { return dict_; }
  const Callable& as_callable() const { return *callable_; }
  // For an undefined value: why it is undefined ("" if unknown).
  const std::string& undefined_message() const { return string_; }

  // Python truthiness; undefined is false.
  bool Truthy() const;

  // What printing, serialising or comparing the value may cost, about in bytes (a shared list
  // counts each time it appears, so this bounds the work on a graph that shares its parts):
  // kValueNodeWeight for a scalar, plus the bytes of a string, plus the items' (and keys')
  // weights of a list or dict; saturating.
  uint64_t weight() const;
  // Containment depth: 0 for a scalar, 1 + the deepest item for a container.
  int depth() const;
  // Whether a namespace() object is inside (namespaces are mutable, so a container holding
  // one could grow after its weight was taken, or hold itself).
  bool holds_namespace() const;
  bool is_namespace() const;

 private:
  explicit Value(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  // Lists and scalars; a dict's lives in the Dict (namespaces change).
  uint64_t weight_ = kValueNodeWeight;
  int depth_ = 0;
  bool holds_namespace_ = false;
  std::string string_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> callable_;
};

// A string-keyed dict in insertion order. `is_namespace` marks namespace() objects, the only
// values a template may assign attributes on.
class Dict {
 public:
  explicit Dict(bool is_namespace = false) : is_namespace_(is_namespace) {}

  const Value* Find(absl::string_view key) const;
  void Set(std::string key, Value value);
  size_t size() const { return items_.size(); }
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  bool is_namespace() const { return is_namespace_; }
  // Value::weight(), depth() and holds_namespace() of the dict (depth never decreases when an
  // item is replaced: an upper bound).
  uint64_t weight() const { return weight_; }
  int depth() const { return depth_; }
  bool holds_namespace() const { return holds_namespace_; }

 private:
  bool is_namespace_;
  uint64_t weight_ = kValueNodeWeight;
  int depth_ = 1;
  bool holds_namespace_ = false;
  std::vector<std::pair<std::string, Value>> items_;
  absl::flat_hash_map<std::string, size_t> index_;
};

// A function value. `name` appears in messages.
struct Callable {
  using Fn = std::function<absl::StatusOr<Value>(const CallArgs& args)>;
  std::string name;
  Fn fn;
};

Value MakeCallable(std::string name, Callable::Fn fn);
Value MakeDict(std::vector<std::pair<std::string, Value>> items, bool is_namespace = false);

// The Python type name, for messages: "str", "int", "list", "dict", "NoneType", "undefined"...
absl::string_view TypeName(const Value& v);

// str(v) as Jinja prints it: undefined → "", none → "None", True, 1.5, ['a', 1], {'k': 'v'}.
std::string ToString(const Value& v);
// repr(v): strings quoted the way Python quotes them.
std::string Repr(const Value& v);

// Python ==, with 1 == 1.0 == True and undefined equal only to undefined.
bool Equals(const Value& a, const Value& b);
// Python <, <= ... for numbers, strings and lists; kInvalidArgument for other types.
absl::StatusOr<int> Compare(const Value& a, const Value& b);

// HTML-escapes & < > " ' as markupsafe does.
std::string HtmlEscape(absl::string_view s);

// The number of code points in a UTF-8 string (Python's len).
size_t Utf8Length(absl::string_view s);
// Splits a UTF-8 string into code points (each a substring).
std::vector<absl::string_view> Utf8Chars(absl::string_view s);

// Conversion from and to the JSON model. FromJson shares nothing with the source.
Value FromJson(const json::Value& v);
// kInvalidArgument for values JSON cannot hold (undefined, callables).
absl::StatusOr<json::Value> ToJson(const Value& v);

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_VALUE_H_
