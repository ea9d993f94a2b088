#include "core/chat/jinja_operators.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"

namespace tandem::chat::jinja {
namespace {

absl::Status Unsupported(absl::string_view op, const Value& a, const Value& b) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported operand type(s) for ", op, ": '",
                                                 TypeName(a), "' and '", TypeName(b), "'"));
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }

absl::StatusOr<Value> Repeat(const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value("") : Value(List{});
  // A list counts by weight: its items may be large, or share large parts.
  size_t unit = seq.is_string() ? seq.as_string().size() : seq.weight();
  if (unit != 0 && static_cast<uint64_t>(n) > kMaxSequenceSize / unit) {
    return absl::ResourceExhaustedError("sequence repetition result too large");
  }
  if (seq.is_string()) {
    std::string out;
    out.reserve(unit * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < n; ++i) {
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> IntArithmetic(char op, int64_t x, int64_t y) {
  int64_t r = 0;
  bool overflow = false;
  switch (op) {
    case '+':
      overflow = __builtin_add_overflow(x, y, &r);
      break;
    case '-':
      overflow = __builtin_sub_overflow(x, y, &r);
      break;
    case '*':
      overflow = __builtin_mul_overflow(x, y, &r);
      break;
    case 'f':  // floor division
    case '%': {
      if (y == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) {
        overflow = op == 'f';
        r = 0;
        break;
      }
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python rounds toward negative infinity
        --q;
        m += y;
      }
      r = op == 'f' ? q : m;
      break;
    }
    default:
      break;
  }
  if (overflow) return absl::InvalidArgumentError("integer overflow");
  return Value(r);
}

absl::StatusOr<Value> Power(const Value& a, const Value& b) {
  if (IsIntLike(a) && IsIntLike(b) && b.as_int() >= 0) {
    int64_t result = 1;
    int64_t base = a.as_int();
    for (int64_t e = b.as_int(); e > 0; --e) {
      if (__builtin_mul_overflow(result, base, &result)) {
        return absl::InvalidArgumentError("integer overflow");
      }
      if (result == 0 || result == 1) break;
    }
    return Value(result);
  }
  return Value(std::pow(a.as_float(), b.as_float()));
}

}  // namespace

absl::Status UndefinedError(const Value& v) {
  return absl::InvalidArgumentError(v.undefined_message().empty() ? std::string("undefined value")
                                                                  : v.undefined_message());
}

absl::StatusOr<Value> BinaryOp(absl::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string left = ToString(a), right = ToString(b);
    if (left.size() + right.size() > kMaxSequenceSize) {
      return absl::ResourceExhaustedError("string concatenation result too large");
    }
    return Value(left + right);
  }
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    bool ints = IsIntLike(a) && IsIntLike(b);
    if (op == "+" || op == "-" || op == "*") {
      if (ints) return IntArithmetic(op[0], a.as_int(), b.as_int());
      double x = a.as_float(), y = b.as_float();
      return Value(op == "+" ? x + y : (op == "-" ? x - y : x * y));
    }
    if (op == "/") {
      if (b.as_float() == 0) return absl::InvalidArgumentError("division by zero");
      return Value(a.as_float() / b.as_float());
    }
    if (op == "//" || op == "%") {
      if (ints) return IntArithmetic(op == "//" ? 'f' : '%', a.as_int(), b.as_int());
      double x = a.as_float(), y = b.as_float();
      if (y == 0) return absl::InvalidArgumentError("float division or modulo by zero");
      if (op == "//") return Value(std::floor(x / y));
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value(m);
    }
    if (op == "**") return Power(a, b);
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > kMaxSequenceSize) {
        return absl::ResourceExhaustedError("string concatenation result too large");
      }
      if (a.is_markup() || b.is_markup()) {  // Markup + str escapes the plain side
        return Value::Markup((a.is_markup() ? a.as_string() : HtmlEscape(a.as_string())) +
                             (b.is_markup() ? b.as_string() : HtmlEscape(b.as_string())));
      }
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      if (a.as_list().size() + b.as_list().size() > kMaxSequenceSize) {
        return absl::ResourceExhaustedError("list concatenation result too large");
      }
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && IsIntLike(b)) return Repeat(a, b.as_int());
    if (IsIntLike(a) && (b.is_string() || b.is_list())) return Repeat(b, a.as_int());
  }
  if (op == "%" && a.is_string()) {
    return absl::InvalidArgumentError("printf-style string formatting ('%') is not supported");
  }
  return Unsupported(op, a, b);
}

absl::StatusOr<Value> UnaryOp(absl::string_view op, const Value& a) {
  if (a.is_undefined()) return UndefinedError(a);
  if (!a.is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad operand type for unary ", op, ": '", TypeName(a), "'"));
  }
  if (op == "+") return a.is_bool() ? Value(a.as_int()) : a;
  if (a.is_float()) return Value(-a.as_float());
  if (a.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow");
  return Value(-a.as_int());
}

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'in <string>' requires string as left operand, not ", TypeName(item)));
      }
      return absl::StrContains(container.as_string(), item.as_string());
    case Value::Kind::kList:
      for (const Value& x : container.as_list()) {
        if (Equals(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().Find(item.as_string()) != nullptr;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("argument of type '", TypeName(container), "' is not iterable"));
  }
}

absl::StatusOr<List> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return List{};
    case Value::Kind::kList:
      return v.as_list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& item : v.as_dict().items()) keys.push_back(Value(item.first));
      return keys;
    }
    case Value::Kind::kString: {
      // One Value per character: bound the list as any other value.
      constexpr size_t kMaxIterated = kMaxSequenceSize / kValueNodeWeight;
      if (v.as_string().size() > kMaxIterated) {
        return absl::ResourceExhaustedError(absl::StrCat("a string of ", v.as_string().size(),
                                                         " bytes is too long to iterate (limit ",
                                                         kMaxIterated, ")"));
      }
      List chars;
      for (absl::string_view c : Utf8Chars(v.as_string())) chars.push_back(Value(std::string(c)));
      return chars;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

std::string Strip(absl::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<absl::string_view> cs = Utf8Chars(s);
  std::vector<absl::string_view> set;
  if (chars != nullptr) set = Utf8Chars(*chars);
  auto strip_it = [&](absl::string_view c) {
    if (chars == nullptr)
      return c.size() == 1 && absl::ascii_isspace(static_cast<unsigned char>(c[0]));
    for (absl::string_view x : set) {
      if (x == c) return true;
    }
    return false;
  };
  size_t begin = 0, end = cs.size();
  if (left) {
    while (begin < end && strip_it(cs[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip_it(cs[end - 1])) --end;
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) out.append(cs[i].data(), cs[i].size());
  return out;
}

namespace {

// Python's str.title / capitalize over ASCII letters; other characters pass through.
std::string Title(absl::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    bool alpha = absl::ascii_isalpha(static_cast<unsigned char>(c));
    if (alpha) {
      c = prev_cased ? absl::ascii_tolower(c) : absl::ascii_toupper(c);
    }
    prev_cased = alpha;
  }
  return out;
}

absl::StatusOr<Value> Split(const std::string& s, const Value* sep, const Value* maxsplit) {
  int64_t limit = maxsplit != nullptr && IsIntLike(*maxsplit) ? maxsplit->as_int() : -1;
  List out;
  if (sep == nullptr || sep->is_none()) {  // runs of whitespace, no empty parts
    size_t i = 0;
    while (true) {
      while (i < s.size() && absl::ascii_isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (limit >= 0 && static_cast<int64_t>(out.size()) == limit) {
        out.push_back(Value(Strip(s.substr(i), nullptr, false, true)));
        break;
      }
      size_t j = i;
      while (j < s.size() && !absl::ascii_isspace(static_cast<unsigned char>(s[j]))) ++j;
      out.push_back(Value(s.substr(i, j - i)));
      i = j;
    }
    return Value(std::move(out));
  }
  if (!sep->is_string()) return absl::InvalidArgumentError("split() separator must be a string");
  const std::string& d = sep->as_string();
  if (d.empty()) return absl::InvalidArgumentError("empty separator");
  size_t start = 0;
  while (true) {
    size_t at = s.find(d, start);
    if (at == std::string::npos || (limit >= 0 && static_cast<int64_t>(out.size()) == limit)) {
      out.push_back(Value(s.substr(start)));
      break;
    }
    out.push_back(Value(s.substr(start, at - start)));
    start = at + d.size();
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> AffixTest(const std::string& s, const Value* arg, bool prefix) {
  if (arg == nullptr) return absl::InvalidArgumentError("startswith/endswith needs an argument");
  std::vector<Value> options = arg->is_list() ? arg->as_list() : List{*arg};
  for (const Value& o : options) {
    if (!o.is_string()) return absl::InvalidArgumentError("startswith/endswith needs strings");
    if (prefix ? absl::StartsWith(s, o.as_string()) : absl::EndsWith(s, o.as_string())) {
      return Value(true);
    }
  }
  return Value(false);
}

// str.format with {} / {0} / {name} fields (no format specs).
absl::StatusOr<Value> Format(const std::string& s, const CallArgs& args) {
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    size_t close = s.find('}', i);
    if (close == std::string::npos) return absl::InvalidArgumentError("unmatched '{' in format");
    std::string field = s.substr(i + 1, close - i - 1);
    const Value* v = nullptr;
    if (field.empty()) {
      v = next_auto < args.positional.size() ? &args.positional[next_auto++] : nullptr;
    } else if (absl::ascii_isdigit(static_cast<unsigned char>(field[0]))) {
      size_t index = std::stoul(field);
      v = index < args.positional.size() ? &args.positional[index] : nullptr;
    } else {
      v = args.Get(SIZE_MAX, field);
    }
    if (v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("format field '{", field, "}' has no value"));
    }
    out += ToString(*v);
    i = close;
  }
  return Value(std::move(out));
}

Value StringMethod(const std::string& s, const std::string& name) {
  auto method = [&](auto fn) { return MakeCallable("str." + name, fn); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return method([s, left, right](const CallArgs& a) -> absl::StatusOr<Value> {
      const Value* chars = a.Get(0, "chars");
      bool given = chars != nullptr && chars->is_string();
      return Value(Strip(s, given ? &chars->as_string() : nullptr, left, right));
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return method(
        [s, prefix](const CallArgs& a) { return AffixTest(s, a.Get(0, "prefix"), prefix); });
  }
  if (name == "split") {
    return method(
        [s](const CallArgs& a) { return Split(s, a.Get(0, "sep"), a.Get(1, "maxsplit")); });
  }
  if (name == "upper" || name == "lower") {
    bool upper = name == "upper";
    return method([s, upper](const CallArgs&) -> absl::StatusOr<Value> {
      return Value(upper ? absl::AsciiStrToUpper(s) : absl::AsciiStrToLower(s));
    });
  }
  if (name == "title") {
    return method([s](const CallArgs&) -> absl::StatusOr<Value> { return Value(Title(s)); });
  }
  if (name == "capitalize") {
    return method([s](const CallArgs&) -> absl::StatusOr<Value> {
      std::string out = absl::AsciiStrToLower(s);
      if (!out.empty()) out[0] = absl::ascii_toupper(out[0]);
      return Value(std::move(out));
    });
  }
  if (name == "replace") {
    return method([s](const CallArgs& a) -> absl::StatusOr<Value> {
      const Value* from = a.Get(0, "old");
      const Value* to = a.Get(1, "new");
      if (from == nullptr || to == nullptr || !from->is_string() || !to->is_string()) {
        return absl::InvalidArgumentError("replace() needs two strings");
      }
      const Value* count = a.Get(2, "count");
      int64_t limit = count != nullptr && IsIntLike(*count) ? count->as_int() : -1;
      ASSIGN_OR_RETURN(std::string out, ReplaceN(s, from->as_string(), to->as_string(), limit));
      return Value(std::move(out));
    });
  }
  if (name == "format") {
    return method([s](const CallArgs& a) { return Format(s, a); });
  }
  if (name == "join") {
    return method([s](const CallArgs& a) -> absl::StatusOr<Value> {
      const Value* items = a.Get(0, "iterable");
      if (items == nullptr) return absl::InvalidArgumentError("join() needs an iterable");
      ASSIGN_OR_RETURN(List list, Iterate(*items));
      std::string out;
      for (size_t i = 0; i < list.size(); ++i) {
        if (i > 0) out += s;
        out += ToString(list[i]);
        RETURN_IF_ERROR(CheckSequenceSize("join() result", out.size()));
      }
      return Value(std::move(out));
    });
  }
  if (name == "find" || name == "count") {
    bool find = name == "find";
    return method([s, find](const CallArgs& a) -> absl::StatusOr<Value> {
      const Value* sub = a.Get(0, "sub");
      if (sub == nullptr || !sub->is_string()) return absl::InvalidArgumentError("needs a string");
      if (find) {
        size_t at = s.find(sub->as_string());
        return at == std::string::npos ? Value(-1)
                                       : Value(static_cast<int64_t>(Utf8Length(s.substr(0, at))));
      }
      if (sub->as_string().empty()) return Value(static_cast<int64_t>(Utf8Length(s) + 1));
      int64_t n = 0;
      for (size_t at = s.find(sub->as_string()); at != std::string::npos;
           at = s.find(sub->as_string(), at + sub->as_string().size())) {
        ++n;
      }
      return Value(n);
    });
  }
  return Value::Undefined(absl::StrCat("'str object' has no attribute '", name, "'"));
}

Value DictMethod(const Value& obj, const std::string& name) {
  std::shared_ptr<Dict> dict = obj.dict_ptr();
  if (name == "items" || name == "keys" || name == "values") {
    int which = name == "items" ? 0 : (name == "keys" ? 1 : 2);
    return MakeCallable("dict." + name, [dict, which](const CallArgs&) -> absl::StatusOr<Value> {
      List out;
      for (const auto& [k, v] : dict->items()) {
        if (which == 0) out.push_back(Value::Tuple({Value(k), v}));
        if (which == 1) out.push_back(Value(k));
        if (which == 2) out.push_back(v);
      }
      return Value(std::move(out));
    });
  }
  if (name == "get") {
    return MakeCallable("dict.get", [dict](const CallArgs& a) -> absl::StatusOr<Value> {
      const Value* key = a.Get(0, "key");
      const Value* fallback = a.Get(1, "default");
      if (key == nullptr) return absl::InvalidArgumentError("get() needs a key");
      const Value* found = key->is_string() ? dict->Find(key->as_string()) : nullptr;
      if (found != nullptr) return *found;
      return fallback != nullptr ? *fallback : Value::None();
    });
  }
  return Value();
}

}  // namespace

absl::Status CheckSequenceSize(absl::string_view what, uint64_t size) {
  if (size <= kMaxSequenceSize) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(what, " exceeds the limit of ", kMaxSequenceSize, " bytes or items"));
}

absl::StatusOr<std::string> ReplaceN(absl::string_view s, absl::string_view from,
                                     absl::string_view to, int64_t limit) {
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  if (from.empty()) {  // Python inserts `to` between every character (and at both ends)
    std::vector<absl::string_view> cs = Utf8Chars(s);
    for (size_t i = 0; i <= cs.size(); ++i) {
      if (limit < 0 || done < limit) {
        absl::StrAppend(&out, to);
        ++done;
      }
      if (i < cs.size()) absl::StrAppend(&out, cs[i]);
      RETURN_IF_ERROR(CheckSequenceSize("replace() result", out.size()));
    }
    return out;
  }
  while (limit < 0 || done < limit) {
    size_t at = s.find(from, start);
    if (at == absl::string_view::npos) break;
    absl::StrAppend(&out, s.substr(start, at - start), to);
    RETURN_IF_ERROR(CheckSequenceSize("replace() result", out.size()));
    start = at + from.size();
    ++done;
  }
  absl::StrAppend(&out, s.substr(start));
  return out;
}

Value GetAttribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (!obj.as_dict().is_namespace()) {
        Value method = DictMethod(obj, name);
        if (!method.is_undefined()) return method;
      }
      if (const Value* v = obj.as_dict().Find(name)) return *v;
      return Value::Undefined(
          absl::StrCat("'", TypeName(obj), " object' has no attribute '", name, "'"));
    }
    case Value::Kind::kString:
      return StringMethod(obj.as_string(), name);
    default:
      return Value::Undefined(
          absl::StrCat("'", TypeName(obj), " object' has no attribute '", name, "'"));
  }
}

Value GetItem(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.as_dict().Find(key.as_string())) return *v;
      return GetAttribute(obj, key.as_string());
    }
  } else if ((obj.is_list() || obj.is_string()) && IsIntLike(key)) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.as_list()[static_cast<size_t>(i)];
    } else {
      std::vector<absl::string_view> cs = Utf8Chars(obj.as_string());
      int64_t n = static_cast<int64_t>(cs.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(std::string(cs[static_cast<size_t>(i)]));
    }
  } else if (key.is_string()) {
    return GetAttribute(obj, key.as_string());
  }
  return Value::Undefined(absl::StrCat("'", TypeName(obj), " object' has no element ", Repr(key)));
}

absl::StatusOr<Value> Slice(const Value& obj, const Value* start, const Value* stop,
                            const Value* step) {
  auto as_index = [](const Value* v, const char* what) -> absl::StatusOr<const Value*> {
    if (v == nullptr || v->is_none()) return nullptr;
    if (!IsIntLike(*v)) {
      return absl::InvalidArgumentError(absl::StrCat("slice ", what, " must be an integer"));
    }
    return v;
  };
  ASSIGN_OR_RETURN(const Value* first, as_index(start, "start"));
  ASSIGN_OR_RETURN(const Value* last, as_index(stop, "stop"));
  ASSIGN_OR_RETURN(const Value* stride, as_index(step, "step"));
  int64_t s = stride != nullptr ? stride->as_int() : 1;
  if (s == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  if (obj.is_undefined()) return UndefinedError(obj);
  std::vector<absl::string_view> chars;
  int64_t n;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.as_list().size());
  } else if (obj.is_string()) {
    chars = Utf8Chars(obj.as_string());
    n = static_cast<int64_t>(chars.size());
  } else {
    return Value::Undefined(absl::StrCat("'", TypeName(obj), "' object is not subscriptable"));
  }
  auto clamp = [&](const Value* v, int64_t fallback) {
    if (v == nullptr) return fallback;
    int64_t i = v->as_int();
    if (i < 0) i += n;
    if (s > 0) return std::min(std::max<int64_t>(i, 0), n);
    return std::min(std::max<int64_t>(i, -1), n - 1);
  };
  int64_t from = clamp(first, s > 0 ? 0 : n - 1);
  int64_t to = clamp(last, s > 0 ? n : -1);
  List items;
  std::string text;
  for (int64_t i = from; s > 0 ? i < to : i > to; i += s) {
    if (obj.is_list()) {
      items.push_back(obj.as_list()[static_cast<size_t>(i)]);
    } else {
      absl::StrAppend(&text, chars[static_cast<size_t>(i)]);
    }
  }
  return obj.is_list() ? Value(std::move(items)) : Value(std::move(text));
}

}  // namespace tandem::chat::jinja
