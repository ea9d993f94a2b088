#include "core/chat/jinja_value.h"

#include <algorithm>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"

namespace tandem::chat::jinja {

const Value* CallArgs::Get(size_t index, absl::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

Value::Value(List list) : kind_(Kind::kList), list_(std::make_shared<List>(std::move(list))) {
  for (const Value& item : *list_) {
    weight_ = SaturatingAdd(weight_, item.weight());
    depth_ = std::max(depth_, item.depth());
    holds_namespace_ = holds_namespace_ || item.is_namespace() || item.holds_namespace();
  }
  ++depth_;
}

uint64_t Value::weight() const { return is_dict() ? dict_->weight() : weight_; }
int Value::depth() const { return is_dict() ? dict_->depth() : depth_; }
bool Value::holds_namespace() const {
  return is_dict() ? dict_->holds_namespace() : holds_namespace_;
}
bool Value::is_namespace() const { return is_dict() && dict_->is_namespace(); }
Value::Value(std::shared_ptr<Dict> dict) : kind_(Kind::kDict), dict_(std::move(dict)) {}
Value::Value(std::shared_ptr<Callable> callable)
    : kind_(Kind::kCallable), callable_(std::move(callable)) {}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0;
    case Kind::kString:
      return !string_.empty();
    case Kind::kList:
      return !list_->empty();
    case Kind::kDict:
      return dict_->size() != 0;
    case Kind::kCallable:
      return true;
  }
  return false;
}

const Value* Dict::Find(absl::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

void Dict::Set(std::string key, Value value) {
  depth_ = std::max(depth_, value.depth() + 1);
  holds_namespace_ = holds_namespace_ || value.is_namespace() || value.holds_namespace();
  auto [it, inserted] = index_.try_emplace(key, items_.size());
  if (!inserted) {
    Value& old = items_[it->second].second;
    weight_ = SaturatingAdd(weight_ - std::min(weight_, old.weight()), value.weight());
    old = std::move(value);
    return;
  }
  weight_ = SaturatingAdd(weight_, SaturatingAdd(key.size(), value.weight()));
  items_.emplace_back(std::move(key), std::move(value));
}

Value MakeCallable(std::string name, Callable::Fn fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value(std::move(c));
}

Value MakeDict(std::vector<std::pair<std::string, Value>> items, bool is_namespace) {
  auto d = std::make_shared<Dict>(is_namespace);
  for (auto& [k, v] : items) d->Set(std::move(k), std::move(v));
  return Value(std::move(d));
}

absl::string_view TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kDict:
      return v.as_dict().is_namespace() ? "Namespace" : "dict";
    case Value::Kind::kCallable:
      return "function";
  }
  return "object";
}

namespace {

std::string QuoteString(absl::string_view s) {
  // Python prefers single quotes unless the text has a single quote and no double quote.
  bool has_single = s.find('\'') != absl::string_view::npos;
  bool has_double = s.find('"') != absl::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (ch == '\n') {
      out.append("\\n");
    } else if (ch == '\r') {
      out.append("\\r");
    } else if (ch == '\t') {
      out.append("\\t");
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out.append(buf);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace

std::string Repr(const Value& v) {
  if (v.is_string()) return QuoteString(v.as_string());
  return ToString(v);
}

std::string ToString(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return absl::StrCat(v.as_int());
    case Value::Kind::kFloat:
      return json::FormatDouble(v.as_float());
    case Value::Kind::kString:
      return v.as_string();
    case Value::Kind::kList: {
      std::string items = absl::StrJoin(
          v.as_list(), ", ", [](std::string* out, const Value& x) { out->append(Repr(x)); });
      if (!v.is_tuple()) return absl::StrCat("[", items, "]");
      return absl::StrCat("(", items, v.as_list().size() == 1 ? ",)" : ")");
    }
    case Value::Kind::kDict: {
      std::string out = v.as_dict().is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [key, value] : v.as_dict().items()) {
        absl::StrAppend(&out, first ? "" : ", ", QuoteString(key), ": ", Repr(value));
        first = false;
      }
      return out + (v.as_dict().is_namespace() ? "}>" : "}");
    }
    case Value::Kind::kCallable:
      return absl::StrCat("<function ", v.as_callable().name, ">");
  }
  return "";
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.as_dict().is_namespace() || b.as_dict().is_namespace()) {
        return a.dict_ptr() == b.dict_ptr();
      }
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [key, value] : a.as_dict().items()) {
        const Value* other = b.as_dict().Find(key);
        if (other == nullptr || !Equals(value, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.as_callable() == &b.as_callable();
    default:
      return false;
  }
}

absl::StatusOr<int> Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, as Python compares str.
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cannot compare ", TypeName(a), " with ", TypeName(b)));
}

std::string HtmlEscape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

size_t Utf8Length(absl::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::vector<absl::string_view> Utf8Chars(absl::string_view s) {
  std::vector<absl::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

Value FromJson(const json::Value& v) {
  switch (v.type()) {
    case json::Value::Type::kNull:
      return Value::None();
    case json::Value::Type::kBool:
      return Value(v.as_bool());
    case json::Value::Type::kInt:
      return Value(v.as_int());
    case json::Value::Type::kDouble:
      return Value(v.as_double());
    case json::Value::Type::kString:
      return Value(v.as_string());
    case json::Value::Type::kArray: {
      List list;
      list.reserve(v.as_array().size());
      for (const json::Value& x : v.as_array()) list.push_back(FromJson(x));
      return Value(std::move(list));
    }
    case json::Value::Type::kObject: {
      auto dict = std::make_shared<Dict>();
      for (const auto& [key, x] : v.as_object()) dict->Set(key, FromJson(x));
      return Value(std::move(dict));
    }
  }
  return Value::None();
}

absl::StatusOr<json::Value> ToJson(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNone:
      return json::Value();
    case Value::Kind::kBool:
      return json::Value(v.as_bool());
    case Value::Kind::kInt:
      return json::Value(v.as_int());
    case Value::Kind::kFloat:
      return json::Value(v.as_float());
    case Value::Kind::kString:
      return json::Value(v.as_string());
    case Value::Kind::kList: {
      json::Array array;
      for (const Value& x : v.as_list()) {
        ASSIGN_OR_RETURN(json::Value j, ToJson(x));
        array.push_back(std::move(j));
      }
      return json::Value(std::move(array));
    }
    case Value::Kind::kDict: {
      json::Object object;
      for (const auto& [key, x] : v.as_dict().items()) {
        ASSIGN_OR_RETURN(json::Value j, ToJson(x));
        object.Set(key, std::move(j));
      }
      return json::Value(std::move(object));
    }
    case Value::Kind::kUndefined:
      return absl::InvalidArgumentError(v.undefined_message().empty()
                                            ? std::string("value is undefined")
                                            : v.undefined_message());
    case Value::Kind::kCallable:
      return absl::InvalidArgumentError(absl::StrCat("cannot serialize ", TypeName(v), " to JSON"));
  }
  return json::Value();
}

}  // namespace tandem::chat::jinja
