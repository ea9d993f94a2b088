#include "core/grammar/json_grammar_rules.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/base/utf8.h"
#include "core/grammar/json_number_range.h"

namespace tandem {
namespace {

using E = GrammarExpr;

E Lit(std::string s) { return E::Literal(std::move(s)); }
E Cls(std::vector<CodepointRange> ranges) { return E::CharClass(std::move(ranges)); }
E Seq(std::vector<E> children) { return E::Sequence(std::move(children)); }
E Alt(std::vector<E> children) { return E::Choice(std::move(children)); }
E Opt(E e) { return E::Optional(std::move(e)); }
E Star(E e) { return E::Repeat(std::move(e), 0, kUnbounded); }
E Plus(E e) { return E::Repeat(std::move(e), 1, kUnbounded); }
E Times(E e, int32_t n) { return E::Repeat(std::move(e), n, n); }

E Digit() { return Cls({{'0', '9'}}); }
E Digits(char lo, char hi) { return Cls({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}}); }
// One of the characters of `chars` (ASCII).
E OneOf(absl::string_view chars) {
  std::vector<CodepointRange> ranges;
  for (char c : chars) ranges.push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
  return Cls(std::move(ranges));
}
E Hex() { return Cls({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}); }
E LowerHex() { return Cls({{'0', '9'}, {'a', 'f'}}); }

// 0 or up to kMaxIntegerDigits digits without a leading zero.
E IntegerPart() {
  return Alt({Lit("0"), Seq({Digits('1', '9'), E::Repeat(Digit(), 0, kMaxIntegerDigits - 1)})});
}

// Four hex digits that are not a surrogate (D800..DFFF).
E NonSurrogateHex4() {
  return Alt({Seq({Cls({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}), Hex(), Hex(),
                   Hex()}),
              Seq({OneOf("dD"), Digits('0', '7'), Hex(), Hex()})});
}

// A surrogate pair as two \u escapes (the leading backslash excluded).
E SurrogatePairEscape() {
  return Seq({Lit("u"), OneOf("dD"), OneOf("89abAB"), Hex(), Hex(), Lit("\\u"), OneOf("dD"),
              Cls({{'c', 'f'}, {'C', 'F'}}), Hex(), Hex()});
}

}  // namespace

std::string CanonicalJsonChar(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case 0x08: return "\\b";
    case 0x09: return "\\t";
    case 0x0A: return "\\n";
    case 0x0C: return "\\f";
    case 0x0D: return "\\r";
    default: break;
  }
  if (cp < 0x20) return absl::StrFormat("\\u%04x", cp);
  std::string out;
  utf8::Append(cp, &out);
  return out;
}

std::vector<uint32_t> DecodeUtf8(absl::string_view utf8) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i < utf8.size()) {
    const uint8_t lead = static_cast<uint8_t>(utf8[i]);
    const size_t n = utf8::CharLength(utf8, i);
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(utf8[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string CanonicalJsonChars(absl::string_view utf8) {
  std::string out;
  for (uint32_t cp : DecodeUtf8(utf8)) out += CanonicalJsonChar(cp);
  return out;
}

JsonGrammarRules::JsonGrammarRules(GrammarBuilder& builder, int32_t max_whitespace)
    : builder_(builder), max_whitespace_(max_whitespace) {
  std::fill(std::begin(ids_), std::end(ids_), -1);
}

int32_t JsonGrammarRules::AddRule(std::string name, GrammarExpr body) {
  const int32_t id = builder_.AddRule(std::move(name));
  absl::Status defined = builder_.DefineRule(id, std::move(body));
  if (!defined.ok() && status_.ok()) status_ = std::move(defined);
  return id;
}

GrammarExpr JsonGrammarRules::Get(Kind kind) {
  static constexpr const char* kNames[kKindCount] = {
      "json-ws",   "json-string-char", "json-string", "json-key-char", "json-number",
      "json-integer", "json-boolean", "json-null",  "json-value",    "json-object",
      "json-array", "format-date",    "format-time", "format-date-time", "format-uuid",
      "format-email"};
  if (ids_[kind] < 0) {
    // The id first, so bodies may refer back to this rule (value -> object -> value).
    ids_[kind] = builder_.AddRule(kNames[kind]);
    absl::Status defined = builder_.DefineRule(ids_[kind], Body(kind));
    if (!defined.ok() && status_.ok()) status_ = std::move(defined);
  }
  return E::Rule(ids_[kind]);
}

GrammarExpr JsonGrammarRules::Whitespace() {
  return max_whitespace_ == 0 ? E::Empty() : Get(kWs);
}
GrammarExpr JsonGrammarRules::StringChar() { return Get(kStringChar); }
GrammarExpr JsonGrammarRules::String() { return Get(kString); }
GrammarExpr JsonGrammarRules::KeyChar() { return Get(kKeyChar); }
GrammarExpr JsonGrammarRules::Number() { return Get(kNumber); }
GrammarExpr JsonGrammarRules::Integer() { return Get(kInteger); }
GrammarExpr JsonGrammarRules::Boolean() { return Get(kBoolean); }
GrammarExpr JsonGrammarRules::Null() { return Get(kNull); }
GrammarExpr JsonGrammarRules::Value() { return Get(kValue); }
GrammarExpr JsonGrammarRules::Object() { return Get(kObject); }
GrammarExpr JsonGrammarRules::Array() { return Get(kArray); }

bool JsonGrammarRules::Format(absl::string_view name, GrammarExpr* out) {
  if (name == "date") {
    *out = Get(kDate);
  } else if (name == "time") {
    *out = Get(kTime);
  } else if (name == "date-time") {
    *out = Get(kDateTime);
  } else if (name == "uuid") {
    *out = Get(kUuid);
  } else if (name == "email") {
    *out = Get(kEmail);
  } else {
    return false;
  }
  return true;
}

GrammarExpr JsonGrammarRules::Bracketed(absl::string_view open, GrammarExpr element,
                                        absl::string_view close) {
  E ws = Whitespace();
  E rest = Star(Seq({ws, Lit(","), ws, element}));
  return Seq({Lit(std::string(open)), ws, Opt(Seq({std::move(element), std::move(rest), ws})),
              Lit(std::string(close))});
}

GrammarExpr JsonGrammarRules::Member(GrammarExpr key, GrammarExpr value) {
  E ws = Whitespace();
  return Seq({std::move(key), ws, Lit(":"), ws, std::move(value)});
}

GrammarExpr JsonGrammarRules::KeyCharExcept(const std::vector<uint32_t>& excluded) const {
  std::vector<uint32_t> cut(excluded);
  cut.push_back('"');
  cut.push_back('\\');
  std::sort(cut.begin(), cut.end());
  // Raw characters: U+0020.. minus the cut code points.
  std::vector<CodepointRange> raw;
  uint32_t next = 0x20;
  for (uint32_t cp : cut) {
    if (cp < next) continue;
    if (cp > next) raw.push_back({next, cp - 1});
    next = cp + 1;
  }
  if (next <= 0x10FFFF) raw.push_back({next, 0x10FFFF});
  std::vector<E> alternatives;
  if (!raw.empty()) alternatives.push_back(Cls(std::move(raw)));
  auto is_excluded = [&](uint32_t cp) {
    return std::find(excluded.begin(), excluded.end(), cp) != excluded.end();
  };
  for (uint32_t cp = 0; cp < 0x20; ++cp) {
    if (!is_excluded(cp)) alternatives.push_back(Lit(CanonicalJsonChar(cp)));
  }
  for (uint32_t cp : {uint32_t{'"'}, uint32_t{'\\'}}) {
    if (!is_excluded(cp)) alternatives.push_back(Lit(CanonicalJsonChar(cp)));
  }
  return Alt(std::move(alternatives));
}

GrammarExpr JsonGrammarRules::Body(Kind kind) {
  switch (kind) {
    case kWs:
      return E::Repeat(OneOf(" \t\n\r"), 0, max_whitespace_);
    case kStringChar:
      return Alt({Cls({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}),
                  Seq({Lit("\\"), Alt({OneOf("\"\\/bfnrt"), Seq({Lit("u"), NonSurrogateHex4()}),
                                       SurrogatePairEscape()})})});
    case kString:
      return Seq({Lit("\""), Star(StringChar()), Lit("\"")});
    case kKeyChar:
      return KeyCharExcept({});
    case kNumber:
      return Seq({Opt(Lit("-")), IntegerPart(), Opt(Seq({Lit("."), Plus(Digit())})),
                  Opt(Seq({OneOf("eE"), Opt(OneOf("+-")), E::Repeat(Digit(), 1, 2)}))});
    case kInteger:
      return Seq({Opt(Lit("-")), IntegerPart()});
    case kBoolean:
      return Alt({Lit("true"), Lit("false")});
    case kNull:
      return Lit("null");
    case kValue:
      return Alt({Object(), Array(), String(), Number(), Boolean(), Null()});
    case kObject:
      return Bracketed("{", Member(String(), Value()), "}");
    case kArray:
      return Bracketed("[", Value(), "]");
    case kDate:
      return DateBody();
    case kTime:
      return TimeBody();
    case kDateTime:
      return Seq({Get(kDate), Lit("T"), Get(kTime)});
    case kUuid:
      return Seq({Times(LowerHex(), 8), Lit("-"), Times(LowerHex(), 4), Lit("-"),
                  Times(LowerHex(), 4), Lit("-"), Times(LowerHex(), 4), Lit("-"),
                  Times(LowerHex(), 12)});
    case kEmail:
      return EmailBody();
    case kKindCount:
      break;
  }
  return E::Empty();
}

// RFC 3339 full-date: months 01-12, days per month, 29 February only in leap years (divisible
// by 4 and not by 100, or by 400), as ajv-formats checks.
GrammarExpr JsonGrammarRules::DateBody() {
  E day_1_28 = Alt({Seq({Lit("0"), Digits('1', '9')}), Seq({Lit("1"), Digit()}),
                    Seq({Lit("2"), Digits('0', '8')})});
  E months_31 = Alt({Lit("01"), Lit("03"), Lit("05"), Lit("07"), Lit("08"), Lit("10"), Lit("12")});
  E months_30 = Alt({Lit("04"), Lit("06"), Lit("09"), Lit("11")});
  E any_year_day = Alt({Seq({months_31, Lit("-"), Alt({day_1_28, Lit("29"), Lit("30"), Lit("31")})}),
                        Seq({months_30, Lit("-"), Alt({day_1_28, Lit("29"), Lit("30")})}),
                        Seq({Lit("02-"), day_1_28})});
  // Two digits that are a multiple of 4 (00 included).
  E multiple_of_4 = Alt({Seq({OneOf("02468"), OneOf("048")}), Seq({OneOf("13579"), OneOf("26")})});
  E leap_year = Alt({Seq({Digit(), Digit(),
                          Alt({Seq({OneOf("02468"), OneOf("48")}), Seq({OneOf("2468"), Lit("0")}),
                               Seq({OneOf("13579"), OneOf("26")})})}),
                     Seq({multiple_of_4, Lit("00")})});
  return Alt({Seq({Times(Digit(), 4), Lit("-"), std::move(any_year_day)}),
              Seq({std::move(leap_year), Lit("-02-29")})});
}

// RFC 3339 full-time: hours 00-23, minutes and seconds 00-59 (no leap second), an optional
// fraction, and "Z" or an offset +hh:mm.
GrammarExpr JsonGrammarRules::TimeBody() {
  E hours = Alt({Seq({OneOf("01"), Digit()}), Seq({Lit("2"), Digits('0', '3')})});
  E minutes = Seq({Digits('0', '5'), Digit()});
  return Seq({hours, Lit(":"), minutes, Lit(":"), minutes, Opt(Seq({Lit("."), Plus(Digit())})),
              Alt({Lit("Z"), Seq({OneOf("+-"), hours, Lit(":"), minutes})})});
}

// local@domain: dot-separated atoms of letters, digits and !#$%&'*+/=?^_`{|}~- ; two or more
// dot-separated host labels (letters, digits, inner hyphens).
GrammarExpr JsonGrammarRules::EmailBody() {
  E atom = Plus(Cls({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'!', '!'}, {'#', '\''}, {'*', '+'},
                     {'-', '-'}, {'/', '/'}, {'=', '='}, {'?', '?'}, {'^', '`'}, {'{', '~'}}));
  E alnum = Cls({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}});
  E label = Seq({alnum, Opt(Seq({Star(Cls({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'-', '-'}})),
                                 alnum}))});
  return Seq({atom, Star(Seq({Lit("."), atom})), Lit("@"), label, Plus(Seq({Lit("."), label}))});
}

}  // namespace tandem
