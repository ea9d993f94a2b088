// Jinja's built-in filters (`x | name(args)`) and tests (`x is name(args)`) that chat templates
// use, with Jinja 3.1 semantics; `tojson` is transformers' version (json.dumps with
// ensure_ascii=False, no HTML escaping).
//
// Filters: abs, capitalize, count, d, default, dictsort, e, escape, first, float, indent, int,
// items, join, last, length, list, lower, map, max, min, reject, rejectattr, replace, reverse,
// round, safe, select, selectattr, sort, string, sum, title, tojson, trim, unique, upper.
// Tests: boolean, callable, defined, divisibleby, eq, equalto, escaped, even, false, float, ge,
// gt, in, integer, iterable, le, lower, lt, mapping, ne, none, number, odd, sameas, sequence,
// string, true, undefined, upper, and the operator spellings ==, !=, <, <=, >, >=.
#ifndef TANDEM_CORE_CHAT_JINJA_FILTERS_H_
#define TANDEM_CORE_CHAT_JINJA_FILTERS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/jinja_value.h"

namespace tandem::chat::jinja {

bool IsKnownFilter(absl::string_view name);
bool IsKnownTest(absl::string_view name);

// kInvalidArgument for an unknown filter or test, bad arguments, or an input the filter cannot
// take (the interpreter adds the template position).
absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input, const CallArgs& args);
absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input, const CallArgs& args);

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_FILTERS_H_
