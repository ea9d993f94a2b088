#include "core/chat/jinja_filters.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/chat/jinja_operators.h"

namespace tandem::chat::jinja {
namespace {

constexpr int64_t kMaxJsonIndent = 1024;

using FilterFn = absl::StatusOr<Value> (*)(const Value& input, const CallArgs& args);
using TestFn = absl::StatusOr<bool> (*)(const Value& input, const CallArgs& args);

bool ArgBool(const CallArgs& a, size_t i, absl::string_view name, bool fallback) {
  const Value* v = a.Get(i, name);
  return v != nullptr ? v->Truthy() : fallback;
}

// The value at a dotted attribute path ("a.b", "0"), as Jinja's attribute= arguments read it.
Value AttributePath(const Value& v, const std::string& path) {
  Value cur = v;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    int64_t index;
    cur = absl::SimpleAtoi(part, &index) ? GetItem(cur, Value(index))
                                         : GetItem(cur, Value(std::string(part)));
    if (cur.is_undefined()) break;
  }
  return cur;
}

// For sort/unique/min/max: strings compare case-insensitively unless asked otherwise.
Value SortKey(const Value& v, const Value* attribute, bool case_sensitive) {
  Value key =
      attribute != nullptr && attribute->is_string() ? AttributePath(v, attribute->as_string()) : v;
  if (!case_sensitive && key.is_string()) return Value(absl::AsciiStrToLower(key.as_string()));
  return key;
}

absl::StatusOr<Value> Length(const Value& in, const CallArgs&) {
  switch (in.kind()) {
    case Value::Kind::kUndefined:
      return Value(0);
    case Value::Kind::kString:
      return Value(static_cast<int64_t>(Utf8Length(in.as_string())));
    case Value::Kind::kList:
      return Value(static_cast<int64_t>(in.as_list().size()));
    case Value::Kind::kDict:
      return Value(static_cast<int64_t>(in.as_dict().size()));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("object of type '", TypeName(in), "' has no len()"));
  }
}

absl::StatusOr<Value> Trim(const Value& in, const CallArgs& a) {
  const Value* chars = a.Get(0, "chars");
  bool given = chars != nullptr && chars->is_string();
  return Value(Strip(ToString(in), given ? &chars->as_string() : nullptr, true, true));
}

absl::StatusOr<Value> ToJsonFilter(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(json::Value j, ToJson(in));
  json::SerializeOptions options;
  const Value* indent = a.Get(1000, "indent");
  if (indent == nullptr && !a.positional.empty()) indent = &a.positional[0];
  if (indent != nullptr && !indent->is_none()) {
    if (!indent->is_int()) return absl::InvalidArgumentError("tojson indent must be an integer");
    // Each nesting level repeats the indent: a wider one only builds a huge string.
    if (indent->as_int() > kMaxJsonIndent) {
      return absl::InvalidArgumentError(
          absl::StrCat("tojson indent ", indent->as_int(), " is over ", kMaxJsonIndent));
    }
    // Each item's line is indented by up to indent x depth: bound the output before
    // building it (escaping aside, the rest is about the value's weight).
    const uint64_t per_item =
        static_cast<uint64_t>(std::max<int64_t>(0, indent->as_int())) * in.depth();
    const uint64_t items = in.weight() / kValueNodeWeight + 1;
    RETURN_IF_ERROR(CheckSequenceSize(
        "tojson result", per_item > kMaxSequenceSize / items ? UINT64_MAX : per_item * items));
    options.indent = static_cast<int>(std::max<int64_t>(-1, indent->as_int()));
  }
  options.ensure_ascii = ArgBool(a, 1000, "ensure_ascii", false);
  options.sort_keys = ArgBool(a, 1000, "sort_keys", false);
  if (const Value* sep = a.Get(1000, "separators"); sep != nullptr && !sep->is_none()) {
    if (!sep->is_list() || sep->as_list().size() != 2 || !sep->as_list()[0].is_string() ||
        !sep->as_list()[1].is_string()) {
      return absl::InvalidArgumentError("tojson separators must be two strings");
    }
    options.item_separator = sep->as_list()[0].as_string();
    options.key_separator = sep->as_list()[1].as_string();
  }
  return Value(json::Serialize(j, options));
}

absl::StatusOr<Value> Upper(const Value& in, const CallArgs&) {
  return Value(absl::AsciiStrToUpper(ToString(in)));
}
absl::StatusOr<Value> Lower(const Value& in, const CallArgs&) {
  return Value(absl::AsciiStrToLower(ToString(in)));
}
absl::StatusOr<Value> TitleFilter(const Value& in, const CallArgs& a) {
  return GetAttribute(Value(ToString(in)), "title").as_callable().fn(a);
}
absl::StatusOr<Value> Capitalize(const Value& in, const CallArgs& a) {
  return GetAttribute(Value(ToString(in)), "capitalize").as_callable().fn(a);
}

absl::StatusOr<Value> Default(const Value& in, const CallArgs& a) {
  const Value* fallback = a.Get(0, "default_value");
  bool boolean = ArgBool(a, 1, "boolean", false);
  if (in.is_undefined() || (boolean && !in.Truthy())) {
    return fallback != nullptr ? *fallback : Value("");
  }
  return in;
}

absl::StatusOr<Value> Items(const Value& in, const CallArgs&) {
  if (in.is_undefined()) return Value(List{});
  if (!in.is_dict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("items filter expects a mapping, got ", TypeName(in)));
  }
  List out;
  for (const auto& [k, v] : in.as_dict().items()) out.push_back(Value::Tuple({Value(k), v}));
  return Value(std::move(out));
}

absl::StatusOr<Value> Join(const Value& in, const CallArgs& a) {
  const Value* sep = a.Get(0, "d");
  const Value* attribute = a.Get(1, "attribute");
  ASSIGN_OR_RETURN(List items, Iterate(in));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && sep != nullptr) out += ToString(*sep);
    out += ToString(attribute != nullptr && attribute->is_string()
                        ? AttributePath(items[i], attribute->as_string())
                        : items[i]);
    RETURN_IF_ERROR(CheckSequenceSize("join result", out.size()));
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> First(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  return items.empty() ? Value::Undefined("No first item, sequence was empty.") : items.front();
}
absl::StatusOr<Value> Last(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  return items.empty() ? Value::Undefined("No last item, sequence was empty.") : items.back();
}

absl::StatusOr<Value> Replace(const Value& in, const CallArgs& a) {
  const Value* from = a.Get(0, "old");
  const Value* to = a.Get(1, "new");
  const Value* count = a.Get(2, "count");
  if (from == nullptr || to == nullptr) {
    return absl::InvalidArgumentError("replace needs old and new strings");
  }
  int64_t limit = count != nullptr && count->is_int() ? count->as_int() : -1;
  ASSIGN_OR_RETURN(std::string out, ReplaceN(ToString(in), ToString(*from), ToString(*to), limit));
  return Value(std::move(out));
}

absl::StatusOr<Value> String(const Value& in, const CallArgs&) { return Value(ToString(in)); }

absl::StatusOr<Value> Int(const Value& in, const CallArgs& a) {
  const Value* fallback = a.Get(0, "default");
  Value otherwise = fallback != nullptr ? *fallback : Value(0);
  if (in.is_bool() || in.is_int()) return Value(in.as_int());
  if (in.is_float()) {
    if (!std::isfinite(in.as_float())) return otherwise;
    return Value(static_cast<int64_t>(std::trunc(in.as_float())));
  }
  if (in.is_string()) {
    std::string s = Strip(in.as_string(), nullptr, true, true);
    int64_t i;
    if (absl::SimpleAtoi(s, &i)) return Value(i);
    double d;
    if (absl::SimpleAtod(s, &d) && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  }
  return otherwise;
}

absl::StatusOr<Value> Float(const Value& in, const CallArgs& a) {
  const Value* fallback = a.Get(0, "default");
  Value otherwise = fallback != nullptr ? *fallback : Value(0.0);
  if (in.is_number()) return Value(in.as_float());
  double d;
  if (in.is_string() && absl::SimpleAtod(Strip(in.as_string(), nullptr, true, true), &d)) {
    return Value(d);
  }
  return otherwise;
}

absl::StatusOr<Value> ListFilter(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  return Value(std::move(items));
}

// select/reject(test, args...) and selectattr/rejectattr(attr, test, args...).
absl::StatusOr<Value> SelectImpl(const Value& in, const CallArgs& a, bool by_attribute, bool keep) {
  if (!in.Truthy()) return Value(List{});  // Jinja yields nothing for a falsy input (none)
  ASSIGN_OR_RETURN(List items, Iterate(in));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (a.positional.empty() || !a.positional[0].is_string()) {
      return absl::InvalidArgumentError("selectattr/rejectattr need an attribute name");
    }
    attribute = a.positional[next++].as_string();
  }
  std::string test;
  if (next < a.positional.size()) {
    if (!a.positional[next].is_string())
      return absl::InvalidArgumentError("test name must be a string");
    test = a.positional[next++].as_string();
  }
  CallArgs test_args;
  test_args.positional.assign(a.positional.begin() + next, a.positional.end());
  List out;
  for (const Value& item : items) {
    Value subject = by_attribute ? AttributePath(item, attribute) : item;
    bool pass;
    if (test.empty()) {
      pass = subject.Truthy();
    } else {
      ASSIGN_OR_RETURN(pass, ApplyTest(test, subject, test_args));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value(std::move(out));
}
absl::StatusOr<Value> Select(const Value& in, const CallArgs& a) {
  return SelectImpl(in, a, false, true);
}
absl::StatusOr<Value> Reject(const Value& in, const CallArgs& a) {
  return SelectImpl(in, a, false, false);
}
absl::StatusOr<Value> SelectAttr(const Value& in, const CallArgs& a) {
  return SelectImpl(in, a, true, true);
}
absl::StatusOr<Value> RejectAttr(const Value& in, const CallArgs& a) {
  return SelectImpl(in, a, true, false);
}

// map(attribute='x', default=d) or map('filter', args...).
absl::StatusOr<Value> Map(const Value& in, const CallArgs& a) {
  if (!in.Truthy()) return Value(List{});  // Jinja yields nothing for a falsy input (none)
  ASSIGN_OR_RETURN(List items, Iterate(in));
  List out;
  if (const Value* attribute = a.Get(1000, "attribute")) {
    const Value* fallback = a.Get(1000, "default");
    for (const Value& item : items) {
      Value v = AttributePath(item, ToString(*attribute));
      out.push_back(v.is_undefined() && fallback != nullptr ? *fallback : v);
    }
    return Value(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) {
    return absl::InvalidArgumentError("map needs a filter name or attribute=");
  }
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : items) {
    ASSIGN_OR_RETURN(Value v, ApplyFilter(a.positional[0].as_string(), item, rest));
    out.push_back(std::move(v));
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> Unique(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  bool case_sensitive = ArgBool(a, 0, "case_sensitive", false);
  const Value* attribute = a.Get(1, "attribute");
  List out, seen;
  for (const Value& item : items) {
    Value key = SortKey(item, attribute, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); })) {
      continue;
    }
    seen.push_back(key);
    out.push_back(item);
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> Round(const Value& in, const CallArgs& a) {
  const Value* precision = a.Get(0, "precision");
  const Value* method = a.Get(1, "method");
  std::string how = method != nullptr ? ToString(*method) : "common";
  int64_t digits = precision != nullptr && precision->is_int() ? precision->as_int() : 0;
  if (!in.is_number()) return absl::InvalidArgumentError("round needs a number");
  if (how == "common" && (in.is_int() || in.is_bool())) return Value(in.as_int());
  double scale = std::pow(10.0, static_cast<double>(digits));
  double x = in.as_float() * scale;
  double r;
  if (how == "common") {
    r = std::nearbyint(x);  // round half to even, as Python's round() does
  } else if (how == "ceil") {
    r = std::ceil(x);
  } else if (how == "floor") {
    r = std::floor(x);
  } else {
    return absl::InvalidArgumentError("round method must be common, ceil or floor");
  }
  return Value(r / scale);
}

absl::StatusOr<Value> Abs(const Value& in, const CallArgs&) {
  if (in.is_float()) return Value(std::fabs(in.as_float()));
  if (in.is_int() || in.is_bool()) {
    if (in.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow");
    return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad operand type for abs(): '", TypeName(in), "'"));
}

// Python's str.splitlines (without keepends) over the line breaks templates meet.
std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

absl::StatusOr<std::string> IndentPad(const Value* width) {
  if (width == nullptr) return std::string("    ");
  if (width->is_string()) return width->as_string();
  if (!width->is_int() && !width->is_bool()) {
    return absl::InvalidArgumentError("indent width must be an int or str");
  }
  // Every line gets the pad, so a pad past the sequence limit could never render.
  if (width->as_int() > static_cast<int64_t>(kMaxSequenceSize)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("indent width ", width->as_int(), " is over ", kMaxSequenceSize));
  }
  return std::string(static_cast<size_t>(std::max<int64_t>(0, width->as_int())), ' ');
}

absl::StatusOr<Value> Indent(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(std::string pad, IndentPad(a.Get(0, "width")));
  bool first = ArgBool(a, 1, "first", false);
  bool blank = ArgBool(a, 2, "blank", false);
  // Jinja appends a newline before splitting, which drops one trailing newline.
  std::vector<std::string> lines = SplitLines(ToString(in) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (out.size() + pad.size() + lines[i].size() + 1 > kMaxSequenceSize) {
      return absl::ResourceExhaustedError("indent result too large");
    }
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
    RETURN_IF_ERROR(CheckSequenceSize("indent result", out.size() + pad.size()));
  }
  if (first) out = pad + out;
  return Value(std::move(out));
}

absl::Status SortList(List* items, const CallArgs& a, size_t case_index, size_t attr_index) {
  bool case_sensitive = ArgBool(a, case_index, "case_sensitive", false);
  const Value* attribute = a.Get(attr_index, "attribute");
  absl::Status error;
  std::stable_sort(items->begin(), items->end(), [&](const Value& x, const Value& y) {
    absl::StatusOr<int> c =
        Compare(SortKey(x, attribute, case_sensitive), SortKey(y, attribute, case_sensitive));
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return *c < 0;
  });
  return error;
}

absl::StatusOr<Value> Sort(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  RETURN_IF_ERROR(SortList(&items, a, 1, 2));
  if (ArgBool(a, 0, "reverse", false)) std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

absl::StatusOr<Value> DictSort(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(Value pairs, Items(in, a));
  List items = pairs.as_list();
  CallArgs sort_args;
  sort_args.keyword = {
      {"case_sensitive", Value(ArgBool(a, 0, "case_sensitive", false))},
      {"attribute",
       Value(ToString(a.Get(1, "by") ? *a.Get(1, "by") : Value("key")) == "value" ? "1" : "0")}};
  RETURN_IF_ERROR(SortList(&items, sort_args, 1000, 1000));
  if (ArgBool(a, 2, "reverse", false)) std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

absl::StatusOr<Value> Reverse(const Value& in, const CallArgs&) {
  if (in.is_string()) {
    std::vector<absl::string_view> cs = Utf8Chars(in.as_string());
    std::string out;
    for (auto it = cs.rbegin(); it != cs.rend(); ++it) absl::StrAppend(&out, *it);
    return Value(std::move(out));
  }
  ASSIGN_OR_RETURN(List items, Iterate(in));
  std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

absl::StatusOr<Value> Sum(const Value& in, const CallArgs& a) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  const Value* attribute = a.Get(0, "attribute");
  const Value* start = a.Get(1, "start");
  Value total = start != nullptr ? *start : Value(0);
  for (const Value& item : items) {
    Value v = attribute != nullptr ? AttributePath(item, ToString(*attribute)) : item;
    ASSIGN_OR_RETURN(total, BinaryOp("+", total, v));
  }
  return total;
}

absl::StatusOr<Value> MinMax(const Value& in, const CallArgs& a, bool max) {
  ASSIGN_OR_RETURN(List items, Iterate(in));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  RETURN_IF_ERROR(SortList(&items, a, 0, 1));
  return max ? items.back() : items.front();
}
absl::StatusOr<Value> Min(const Value& in, const CallArgs& a) { return MinMax(in, a, false); }
absl::StatusOr<Value> Max(const Value& in, const CallArgs& a) { return MinMax(in, a, true); }

absl::StatusOr<Value> Escape(const Value& in, const CallArgs&) {
  if (in.is_markup()) return in;
  return Value::Markup(HtmlEscape(ToString(in)));
}

absl::StatusOr<Value> Safe(const Value& in, const CallArgs&) { return Value::Markup(ToString(in)); }

const absl::flat_hash_map<std::string, FilterFn>& Filters() {
  static const auto* filters = new absl::flat_hash_map<std::string, FilterFn>{
      {"abs", Abs},
      {"capitalize", Capitalize},
      {"count", Length},
      {"d", Default},
      {"default", Default},
      {"dictsort", DictSort},
      {"e", Escape},
      {"escape", Escape},
      {"first", First},
      {"float", Float},
      {"indent", Indent},
      {"int", Int},
      {"items", Items},
      {"join", Join},
      {"last", Last},
      {"length", Length},
      {"list", ListFilter},
      {"lower", Lower},
      {"map", Map},
      {"max", Max},
      {"min", Min},
      {"reject", Reject},
      {"rejectattr", RejectAttr},
      {"replace", Replace},
      {"reverse", Reverse},
      {"round", Round},
      {"safe", Safe},
      {"select", Select},
      {"selectattr", SelectAttr},
      {"sort", Sort},
      {"string", String},
      {"sum", Sum},
      {"title", TitleFilter},
      {"tojson", ToJsonFilter},
      {"trim", Trim},
      {"unique", Unique},
      {"upper", Upper},
  };
  return *filters;
}

// ----- tests

const Value& Arg0(const CallArgs& a) {
  static const Value* undefined = new Value();
  return a.positional.empty() ? *undefined : a.positional[0];
}

absl::StatusOr<bool> CompareTest(const Value& in, const CallArgs& a, int want_low, int want_high) {
  ASSIGN_OR_RETURN(int c, Compare(in, Arg0(a)));
  return c >= want_low && c <= want_high;
}

const absl::flat_hash_map<std::string, TestFn>& Tests() {
  using V = const Value&;
  using A = const CallArgs&;
  static const auto* tests = new absl::flat_hash_map<std::string, TestFn>{
      {"defined", [](V v, A) -> absl::StatusOr<bool> { return !v.is_undefined(); }},
      {"undefined", [](V v, A) -> absl::StatusOr<bool> { return v.is_undefined(); }},
      {"none", [](V v, A) -> absl::StatusOr<bool> { return v.is_none(); }},
      {"boolean", [](V v, A) -> absl::StatusOr<bool> { return v.is_bool(); }},
      {"true", [](V v, A) -> absl::StatusOr<bool> { return v.is_bool() && v.as_bool(); }},
      {"false", [](V v, A) -> absl::StatusOr<bool> { return v.is_bool() && !v.as_bool(); }},
      {"string", [](V v, A) -> absl::StatusOr<bool> { return v.is_string(); }},
      {"number", [](V v, A) -> absl::StatusOr<bool> { return v.is_number(); }},
      {"integer", [](V v, A) -> absl::StatusOr<bool> { return v.is_int(); }},
      {"float", [](V v, A) -> absl::StatusOr<bool> { return v.is_float(); }},
      {"mapping", [](V v, A) -> absl::StatusOr<bool> { return v.is_dict(); }},
      {"callable", [](V v, A) -> absl::StatusOr<bool> { return v.is_callable(); }},
      {"iterable",
       [](V v, A) -> absl::StatusOr<bool> {
         return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
       }},
      {"sequence",
       [](V v, A) -> absl::StatusOr<bool> {
         return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
       }},
      {"escaped", [](V, A) -> absl::StatusOr<bool> { return false; }},
      {"lower",
       [](V v, A) -> absl::StatusOr<bool> {
         std::string s = ToString(v);
         return s == absl::AsciiStrToLower(s);
       }},
      {"upper",
       [](V v, A) -> absl::StatusOr<bool> {
         std::string s = ToString(v);
         return s == absl::AsciiStrToUpper(s);
       }},
      {"odd",
       [](V v, A) -> absl::StatusOr<bool> {
         if (!v.is_int() && !v.is_bool()) return absl::InvalidArgumentError("odd needs an integer");
         return v.as_int() % 2 != 0;
       }},
      {"even",
       [](V v, A) -> absl::StatusOr<bool> {
         if (!v.is_int() && !v.is_bool())
           return absl::InvalidArgumentError("even needs an integer");
         return v.as_int() % 2 == 0;
       }},
      {"divisibleby",
       [](V v, A a) -> absl::StatusOr<bool> {
         const Value& d = Arg0(a);
         if (!(v.is_int() || v.is_bool()) || !(d.is_int() || d.is_bool()) || d.as_int() == 0) {
           return absl::InvalidArgumentError("divisibleby needs a non-zero integer");
         }
         return v.as_int() % d.as_int() == 0;
       }},
      {"eq", [](V v, A a) -> absl::StatusOr<bool> { return Equals(v, Arg0(a)); }},
      {"equalto", [](V v, A a) -> absl::StatusOr<bool> { return Equals(v, Arg0(a)); }},
      {"==", [](V v, A a) -> absl::StatusOr<bool> { return Equals(v, Arg0(a)); }},
      {"ne", [](V v, A a) -> absl::StatusOr<bool> { return !Equals(v, Arg0(a)); }},
      {"!=", [](V v, A a) -> absl::StatusOr<bool> { return !Equals(v, Arg0(a)); }},
      {"lt", [](V v, A a) { return CompareTest(v, a, -1, -1); }},
      {"<", [](V v, A a) { return CompareTest(v, a, -1, -1); }},
      {"le", [](V v, A a) { return CompareTest(v, a, -1, 0); }},
      {"<=", [](V v, A a) { return CompareTest(v, a, -1, 0); }},
      {"gt", [](V v, A a) { return CompareTest(v, a, 1, 1); }},
      {">", [](V v, A a) { return CompareTest(v, a, 1, 1); }},
      {"ge", [](V v, A a) { return CompareTest(v, a, 0, 1); }},
      {">=", [](V v, A a) { return CompareTest(v, a, 0, 1); }},
      {"in", [](V v, A a) { return Contains(Arg0(a), v); }},
      {"sameas",
       [](V v,
          A a) -> absl::
                   StatusOr<bool> {
                     const Value& o = Arg0(a);
                     if (v.kind() != o.kind()) return false;
                     if (v.is_list()) return v.list_ptr() == o.list_ptr();
                     if (v.is_dict()) return v.dict_ptr() == o.dict_ptr();
                     return Equals(v, o);
                   }},
  };
  return *tests;
}

}  // namespace

bool IsKnownFilter(absl::string_view name) { return Filters().contains(name); }
bool IsKnownTest(absl::string_view name) { return Tests().contains(name); }

absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input,
                                  const CallArgs& args) {
  auto it = Filters().find(name);
  if (it == Filters().end()) {
    return absl::InvalidArgumentError(absl::StrCat("no filter named '", name, "'"));
  }
  return it->second(input, args);
}

absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input, const CallArgs& args) {
  auto it = Tests().find(name);
  if (it == Tests().end()) {
    return absl::InvalidArgumentError(absl::StrCat("no test named '", name, "'"));
  }
  return it->second(input, args);
}

}  // namespace tandem::chat::jinja
