#include "core/base/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"

namespace tandem::json {
namespace {

// Programmer invariant: as_X() is called only after is_X() (or a switch on type()). Every
// reader of file or request JSON (tokenizer.json, config.json, safetensors headers, chat
// messages) tests the type first and answers a Status, so parsed data never reaches this.
[[noreturn]] void WrongType(Value::Type have, absl::string_view want) {
  std::fprintf(stderr, "json::Value: %s accessed as %s\n", std::string(TypeName(have)).c_str(),
               std::string(want).c_str());
  std::abort();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Object

Object::Object(std::initializer_list<Member> members) {
  for (const Member& m : members) Set(m.first, m.second);
}

const Value* Object::Find(absl::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &members_[it->second].second;
}

Value* Object::Find(absl::string_view key) {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &members_[it->second].second;
}

Value& Object::Set(std::string key, Value value) {
  auto [it, inserted] = index_.try_emplace(key, members_.size());
  if (!inserted) return members_[it->second].second = std::move(value);
  members_.emplace_back(std::move(key), std::move(value));
  return members_.back().second;
}

Value& Object::operator[](absl::string_view key) {
  if (Value* v = Find(key)) return *v;
  return Set(std::string(key), Value());
}

bool Object::Erase(absl::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  size_t pos = it->second;
  index_.erase(it);
  members_.erase(members_.begin() + pos);
  for (auto& [k, p] : index_) {
    if (p > pos) --p;
  }
  return true;
}

bool operator==(const Object& a, const Object& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a) {
    const Value* other = b.Find(key);
    if (other == nullptr || *other != value) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Value

bool Value::as_bool() const {
  if (!is_bool()) WrongType(type(), "boolean");
  return std::get<bool>(data_);
}
int64_t Value::as_int() const {
  if (!is_int()) WrongType(type(), "integer");
  return std::get<int64_t>(data_);
}
double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(data_));
  if (!is_double()) WrongType(type(), "number");
  return std::get<double>(data_);
}
const std::string& Value::as_string() const {
  if (!is_string()) WrongType(type(), "string");
  return std::get<std::string>(data_);
}
std::string& Value::as_string() {
  if (!is_string()) WrongType(type(), "string");
  return std::get<std::string>(data_);
}
const Array& Value::as_array() const {
  if (!is_array()) WrongType(type(), "array");
  return std::get<Array>(data_);
}
Array& Value::as_array() {
  if (!is_array()) WrongType(type(), "array");
  return std::get<Array>(data_);
}
const Object& Value::as_object() const {
  if (!is_object()) WrongType(type(), "object");
  return std::get<Object>(data_);
}
Object& Value::as_object() {
  if (!is_object()) WrongType(type(), "object");
  return std::get<Object>(data_);
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  return a.data_ == b.data_;
}

absl::string_view TypeName(Value::Type type) {
  switch (type) {
    case Value::Type::kNull:
      return "null";
    case Value::Type::kBool:
      return "boolean";
    case Value::Type::kInt:
      return "integer";
    case Value::Type::kDouble:
      return "number";
    case Value::Type::kString:
      return "string";
    case Value::Type::kArray:
      return "array";
    case Value::Type::kObject:
      return "object";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Parser

namespace {

// Decodes one UTF-8 sequence at text[*pos]; advances *pos. Returns false if it is not valid
// (overlong, surrogate, above U+10FFFF, truncated).
bool DecodeUtf8(absl::string_view text, size_t* pos, uint32_t* code_point) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char b0 = byte(*pos);
  int len;
  uint32_t cp;
  uint32_t min;
  if (b0 < 0x80) {
    *code_point = b0;
    ++*pos;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return false;
  }
  if (*pos + len > text.size()) return false;
  for (int i = 1; i < len; ++i) {
    unsigned char b = byte(*pos + i);
    if ((b & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  *code_point = cp;
  *pos += len;
  return true;
}

class Parser {
 public:
  Parser(absl::string_view text, const ParseOptions& options) : text_(text), options_(options) {}

  absl::StatusOr<Value> ParseDocument() {
    SkipWhitespace();
    ASSIGN_OR_RETURN(Value v, ParseValue(0));
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("expected end of input after the value");
    return v;
  }

 private:
  absl::Status Error(absl::string_view what) const { return ErrorAt(pos_, what); }

  // "JSON parse error at 3:7: <what>", the column counted in characters.
  absl::Status ErrorAt(size_t at, absl::string_view what) const {
    int line = 1;
    int column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++column;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("JSON parse error at ", line, ":", column, ": ", what));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipWhitespace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  absl::StatusOr<Value> ParseValue(int depth) {
    if (AtEnd()) return Error("expected a value, found end of input");
    switch (Peek()) {
      case '{':
        return ParseObject(depth + 1);
      case '[':
        return ParseArray(depth + 1);
      case '"': {
        ASSIGN_OR_RETURN(std::string s, ParseString());
        return Value(std::move(s));
      }
      case 't':
        return ParseLiteral("true", Value(true));
      case 'f':
        return ParseLiteral("false", Value(false));
      case 'n':
        return ParseLiteral("null", Value());
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) return ParseNumber();
        return Error("expected a value (object, array, string, number, true, false or null)");
    }
  }

  absl::StatusOr<Value> ParseLiteral(absl::string_view word, Value value) {
    if (text_.substr(pos_, word.size()) != word) {
      return Error(absl::StrCat("expected '", word, "'"));
    }
    pos_ += word.size();
    return value;
  }

  absl::StatusOr<Value> ParseObject(int depth) {
    if (depth > options_.max_depth) {
      return Error(absl::StrCat("nesting deeper than ", options_.max_depth, " levels"));
    }
    ++pos_;  // '{'
    Object object;
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return Value(std::move(object));
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || Peek() != '"') return Error("expected '\"' to begin an object key");
      ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') return Error("expected ':' after an object key");
      ++pos_;
      SkipWhitespace();
      ASSIGN_OR_RETURN(Value value, ParseValue(depth));
      object.Set(std::move(key), std::move(value));  // a repeated key: the last value wins
      SkipWhitespace();
      if (AtEnd()) return Error("expected ',' or '}' after an object member");
      if (Peek() == '}') {
        ++pos_;
        return Value(std::move(object));
      }
      if (Peek() != ',') return Error("expected ',' or '}' after an object member");
      ++pos_;
    }
  }

  absl::StatusOr<Value> ParseArray(int depth) {
    if (depth > options_.max_depth) {
      return Error(absl::StrCat("nesting deeper than ", options_.max_depth, " levels"));
    }
    ++pos_;  // '['
    Array array;
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return Value(std::move(array));
    }
    while (true) {
      SkipWhitespace();
      ASSIGN_OR_RETURN(Value value, ParseValue(depth));
      array.push_back(std::move(value));
      SkipWhitespace();
      if (AtEnd()) return Error("expected ',' or ']' after an array element");
      if (Peek() == ']') {
        ++pos_;
        return Value(std::move(array));
      }
      if (Peek() != ',') return Error("expected ',' or ']' after an array element");
      ++pos_;
    }
  }

  absl::StatusOr<Value> ParseNumber() {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++pos_, ++n;
      return n;
    };
    if (Peek() == '-') ++pos_;
    if (AtEnd() || !(Peek() >= '0' && Peek() <= '9')) return Error("expected a digit");
    if (Peek() == '0') {
      ++pos_;
      if (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
        return Error("leading zeros are not allowed in numbers");
      }
    } else {
      digits();
    }
    bool integral = true;
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) return Error("expected a digit after the decimal point");
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      integral = false;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (digits() == 0) return Error("expected a digit in the exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t i;
      auto [ptr, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && ptr == last) return Value(i);
      // Too big for int64: fall through to double, as strtod would.
    }
    double d = 0;
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      // from_chars leaves `d` alone when out of range; strtod tells underflow (a tiny or zero
      // result, accepted as Python does) from overflow (HUGE_VAL, rejected).
      d = std::strtod(std::string(first, last).c_str(), nullptr);
    } else if (ec != std::errc() || ptr != last) {
      return ErrorAt(start, "malformed number");
    }
    if (std::isinf(d)) return ErrorAt(start, "number out of the range of a double");
    return Value(d);
  }

  absl::StatusOr<uint32_t> ParseHex4() {
    if (pos_ + 4 > text_.size()) return Error("expected 4 hex digits after \\u");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return ErrorAt(pos_ + i, "expected 4 hex digits after \\u");
      }
    }
    pos_ += 4;
    return v;
  }

  // At '\\'; appends the decoded escape to `out`.
  absl::Status ParseEscape(std::string* out) {
    size_t start = pos_;
    ++pos_;
    if (AtEnd()) return Error("expected an escape character after '\\'");
    char c = text_[pos_++];
    switch (c) {
      case '"':
        out->push_back('"');
        return absl::OkStatus();
      case '\\':
        out->push_back('\\');
        return absl::OkStatus();
      case '/':
        out->push_back('/');
        return absl::OkStatus();
      case 'b':
        out->push_back('\b');
        return absl::OkStatus();
      case 'f':
        out->push_back('\f');
        return absl::OkStatus();
      case 'n':
        out->push_back('\n');
        return absl::OkStatus();
      case 'r':
        out->push_back('\r');
        return absl::OkStatus();
      case 't':
        out->push_back('\t');
        return absl::OkStatus();
      case 'u':
        break;
      default:
        return ErrorAt(pos_ - 1, "expected one of \" \\ / b f n r t u after '\\'");
    }
    ASSIGN_OR_RETURN(uint32_t cp, ParseHex4());
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return ErrorAt(start, "unpaired low surrogate in \\u escape");
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u") {
        return ErrorAt(start, "high surrogate not followed by a \\u low surrogate");
      }
      pos_ += 2;
      ASSIGN_OR_RETURN(uint32_t low, ParseHex4());
      if (low < 0xDC00 || low > 0xDFFF) {
        return ErrorAt(start, "high surrogate not followed by a \\u low surrogate");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    utf8::Append(cp, out);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ParseString() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (AtEnd()) return Error("expected '\"' to end the string, found end of input");
      unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        RETURN_IF_ERROR(ParseEscape(&out));
      } else if (c < 0x20) {
        return Error("control characters must be escaped in strings");
      } else if (c < 0x80) {
        out.push_back(static_cast<char>(c));
        ++pos_;
      } else {
        size_t start = pos_;
        uint32_t cp;
        if (!DecodeUtf8(text_, &pos_, &cp)) return Error("invalid UTF-8 in string");
        out.append(text_.data() + start, pos_ - start);
      }
    }
  }

  absl::string_view text_;
  const ParseOptions& options_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Value> Parse(absl::string_view text, const ParseOptions& options) {
  return Parser(text, options).ParseDocument();
}

// ---------------------------------------------------------------------------------------------
// Serializer

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, e.g. "-1.2345e+02".
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, end);
  bool negative = sci[0] == '-';
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  int exponent = std::atoi(sci.c_str() + e + 1);
  // Python's float repr: positional when -4 <= exponent < 16, else scientific.
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exp_buf;
  }
  if (exponent < 0) {
    return absl::StrCat(out, "0.", std::string(-exponent - 1, '0'), digits);
  }
  size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len) {
    return absl::StrCat(out, digits, std::string(int_len - digits.size(), '0'), ".0");
  }
  return absl::StrCat(out, digits.substr(0, int_len), ".", digits.substr(int_len));
}

namespace {

void AppendEscapedCodeUnit(uint32_t unit, std::string* out) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", unit);
  out->append(buf);
}

}  // namespace

void AppendQuoted(absl::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out->append("\\\"");
        ++i;
        continue;
      case '\\':
        out->append("\\\\");
        ++i;
        continue;
      case '\n':
        out->append("\\n");
        ++i;
        continue;
      case '\r':
        out->append("\\r");
        ++i;
        continue;
      case '\t':
        out->append("\\t");
        ++i;
        continue;
      case '\b':
        out->append("\\b");
        ++i;
        continue;
      case '\f':
        out->append("\\f");
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
      AppendEscapedCodeUnit(c, out);
      ++i;
    } else if (c < 0x80 || !ensure_ascii) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else {
      uint32_t cp;
      size_t start = i;
      if (!DecodeUtf8(s, &i, &cp)) {  // not UTF-8: escape the byte as a code point
        cp = c;
        i = start + 1;
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        AppendEscapedCodeUnit(0xD800 + (cp >> 10), out);
        AppendEscapedCodeUnit(0xDC00 + (cp & 0x3FF), out);
      } else {
        AppendEscapedCodeUnit(cp, out);
      }
    }
  }
  out->push_back('"');
}

namespace {

class Serializer {
 public:
  explicit Serializer(const SerializeOptions& options)
      : options_(options),
        item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")) {}

  void Write(const Value& v, int level, std::string* out) const {
    switch (v.type()) {
      case Value::Type::kNull:
        out->append("null");
        return;
      case Value::Type::kBool:
        out->append(v.as_bool() ? "true" : "false");
        return;
      case Value::Type::kInt:
        absl::StrAppend(out, v.as_int());
        return;
      case Value::Type::kDouble:
        WriteDouble(v.as_double(), out);
        return;
      case Value::Type::kString:
        AppendQuoted(v.as_string(), options_.ensure_ascii, out);
        return;
      case Value::Type::kArray:
        WriteArray(v.as_array(), level, out);
        return;
      case Value::Type::kObject:
        WriteObject(v.as_object(), level, out);
        return;
    }
  }

 private:
  static void WriteDouble(double d, std::string* out) {
    if (std::isnan(d)) {
      out->append("NaN");
    } else if (std::isinf(d)) {
      out->append(d > 0 ? "Infinity" : "-Infinity");
    } else {
      out->append(FormatDouble(d));
    }
  }

  // Before an item at `level`: a newline and indentation when pretty-printing.
  void Newline(int level, std::string* out) const {
    if (!options_.indent) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(std::max(0, *options_.indent) * level), ' ');
  }

  void WriteArray(const Array& a, int level, std::string* out) const {
    if (a.empty()) {
      out->append("[]");
      return;
    }
    out->push_back('[');
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out->append(item_separator_);
      Newline(level + 1, out);
      Write(a[i], level + 1, out);
    }
    Newline(level, out);
    out->push_back(']');
  }

  void WriteObject(const Object& o, int level, std::string* out) const {
    if (o.empty()) {
      out->append("{}");
      return;
    }
    std::vector<const Object::Member*> members;
    members.reserve(o.size());
    for (const Object::Member& m : o) members.push_back(&m);
    if (options_.sort_keys) {
      // Byte order of UTF-8 equals code point order, which is how Python sorts str keys.
      std::stable_sort(members.begin(), members.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out->push_back('{');
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) out->append(item_separator_);
      Newline(level + 1, out);
      AppendQuoted(members[i]->first, options_.ensure_ascii, out);
      out->append(options_.key_separator);
      Write(members[i]->second, level + 1, out);
    }
    Newline(level, out);
    out->push_back('}');
  }

  const SerializeOptions& options_;
  std::string item_separator_;
};

}  // namespace

std::string Serialize(const Value& value, const SerializeOptions& options) {
  std::string out;
  Serializer(options).Write(value, 0, &out);
  return out;
}

}  // namespace tandem::json
