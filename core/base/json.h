// A small, strict JSON library (RFC 8259).
//
//   ASSIGN_OR_RETURN(json::Value v, json::Parse(R"({"b": 1, "a": [true, 2.5]})"));
//   v.as_object().Find("a")->as_array()[1].as_double();    // 2.5
//   json::Serialize(v);                                      // {"b": 1, "a": [true, 2.5]}
//
// Numbers keep integers exact: an integer literal that fits int64 is stored as int64, every
// other number as double. Objects keep their keys in insertion order (Jinja's `tojson` and
// `items` must reproduce the order the request used) and still look keys up in O(1).
// Serialize() mirrors Python's `json.dumps` as transformers' chat templates call it.
//
// Values are plain data: copyable, movable, not synchronised (one thread at a time).
#ifndef TANDEM_CORE_BASE_JSON_H_
#define TANDEM_CORE_BASE_JSON_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::json {

class Value;
using Array = std::vector<Value>;

// A JSON object: members in insertion order plus a key index.
class Object {
 public:
  using Member = std::pair<std::string, Value>;
  using const_iterator = std::vector<Member>::const_iterator;
  using iterator = std::vector<Member>::iterator;

  Object() = default;
  Object(std::initializer_list<Member> members);

  // nullptr if `key` is absent.
  const Value* Find(absl::string_view key) const;
  Value* Find(absl::string_view key);
  bool Contains(absl::string_view key) const { return index_.contains(key); }

  // Sets `key` to `value`. A new key goes last; an existing key keeps its place (as a Python
  // dict does). Returns a reference to the stored value.
  Value& Set(std::string key, Value value);
  // The value under `key`, inserting null at the end if absent.
  Value& operator[](absl::string_view key);
  // Removes `key`; returns whether it was present. O(size).
  bool Erase(absl::string_view key);

  size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  const_iterator begin() const { return members_.begin(); }
  const_iterator end() const { return members_.end(); }
  // Mutable iteration may change values, never keys.
  iterator begin() { return members_.begin(); }
  iterator end() { return members_.end(); }

  // Python dict equality: same keys and equal values, order ignored.
  friend bool operator==(const Object& a, const Object& b);
  friend bool operator!=(const Object& a, const Object& b) { return !(a == b); }

 private:
  std::vector<Member> members_;
  absl::flat_hash_map<std::string, size_t> index_;  // key -> position in members_
};

class Value {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  Value() = default;           // null
  Value(std::nullptr_t) {}     // NOLINT: implicit by design, as are the ones below
  Value(bool b) : data_(b) {}  // NOLINT
  template <typename T,
            typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  Value(T i) : data_(static_cast<int64_t>(i)) {}         // NOLINT
  Value(double d) : data_(d) {}                          // NOLINT
  Value(std::string s) : data_(std::move(s)) {}          // NOLINT
  Value(absl::string_view s) : data_(std::string(s)) {}  // NOLINT
  Value(const char* s) : data_(std::string(s)) {}        // NOLINT
  Value(Array a) : data_(std::move(a)) {}                // NOLINT
  Value(Object o) : data_(std::move(o)) {}               // NOLINT

  Type type() const { return static_cast<Type>(data_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_double() const { return type() == Type::kDouble; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Accessors; calling one on the wrong type is a programmer error and aborts.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // an int converts
  const std::string& as_string() const;
  std::string& as_string();
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Structural equality as Python compares parsed JSON: 1 == 1.0, objects ignore order.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> data_;
};

// The name of a type for messages: "null", "boolean", "integer", "number", "string", ...
absl::string_view TypeName(Value::Type type);

struct ParseOptions {
  // Arrays and objects nested deeper than this are rejected (bounds the parser's recursion).
  int max_depth = 256;
};

// Parses one JSON text (surrounding whitespace allowed). Accepts valid UTF-8 only; decodes
// escapes, joining \uXXXX surrogate pairs. Errors are kInvalidArgument naming the line and
// column (1-based, in characters) and what was expected.
absl::StatusOr<Value> Parse(absl::string_view text, const ParseOptions& options = {});

// Python's json.dumps options (transformers' `tojson`: ensure_ascii=False, sort_keys=False).
struct SerializeOptions {
  // Pretty-print with this many spaces per level (0 still breaks lines); nullopt: one line.
  std::optional<int> indent;
  // Between items; nullopt means Python's default: ", " without indent, "," with it.
  std::optional<std::string> item_separator;
  std::string key_separator = ": ";
  // Escape every non-ASCII character as \uXXXX (surrogate pairs above U+FFFF).
  bool ensure_ascii = false;
  bool sort_keys = false;
};

std::string Serialize(const Value& value, const SerializeOptions& options = {});

// Python's repr() of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string FormatDouble(double d);

// Appends `s` as a JSON string literal (with quotes) to `out`.
void AppendQuoted(absl::string_view s, bool ensure_ascii, std::string* out);

}  // namespace tandem::json

#endif  // TANDEM_CORE_BASE_JSON_H_
