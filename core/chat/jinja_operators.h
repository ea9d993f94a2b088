// Jinja's operators and element access over jinja::Value, with Python semantics: arithmetic
// (int64 with overflow errors), concatenation, `in`, iteration, indexing, slicing, and the
// attributes and methods of str and dict that chat templates call.
//
// Errors are plain kInvalidArgument messages (the interpreter adds the position); a result
// that would exceed `kMaxSequenceSize` elements or bytes is kResourceExhausted.
#ifndef TANDEM_CORE_CHAT_JINJA_OPERATORS_H_
#define TANDEM_CORE_CHAT_JINJA_OPERATORS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/jinja_value.h"

namespace tandem::chat::jinja {

inline constexpr size_t kMaxSequenceSize = size_t{1} << 24;
// kResourceExhausted naming `what` when `size` (bytes or elements) exceeds kMaxSequenceSize:
// for results that are checked while they are built.
absl::Status CheckSequenceSize(absl::string_view what, uint64_t size);

// The error for using an undefined value where a defined one is needed.
absl::Status UndefinedError(const Value& v);

// + - * / // % ** ~ (`op` is the operator's spelling).
absl::StatusOr<Value> BinaryOp(absl::string_view op, const Value& a, const Value& b);
// Unary - and +.
absl::StatusOr<Value> UnaryOp(absl::string_view op, const Value& a);
// `item in container`.
absl::StatusOr<bool> Contains(const Value& container, const Value& item);
// The items a for loop sees: list elements, dict keys, string characters; undefined is empty.
absl::StatusOr<List> Iterate(const Value& v);

// obj.name: dict methods (items, keys, values, get) and keys, namespace attributes, str
// methods; anything else is undefined.
Value GetAttribute(const Value& obj, const std::string& name);
// obj[key]: dict keys, list and str indices (negative from the end); misses are undefined.
Value GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] on a list or str; null parts are Python's None.
absl::StatusOr<Value> Slice(const Value& obj, const Value* start, const Value* stop,
                            const Value* step);

// Python's str.replace: at most `limit` replacements (all if negative); kResourceExhausted
// if the result would exceed kMaxSequenceSize bytes.
absl::StatusOr<std::string> ReplaceN(absl::string_view s, absl::string_view from,
                                     absl::string_view to, int64_t limit);

// Python's str.strip family: `chars` (code points) or whitespace when null.
std::string Strip(absl::string_view s, const std::string* chars, bool left, bool right);

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_OPERATORS_H_
