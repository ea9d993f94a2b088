#include "core/grammar/gbnf_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {
namespace {

// Counts past this are all "too many" (they are refused anyway); keeps the arithmetic small.
constexpr int64_t kCountCeiling = int64_t{1} << 40;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// The code point of the well-formed UTF-8 sequence at text[pos] and its length, or length 0
// if the sequence is malformed (truncated, overlong, a surrogate, past U+10FFFF).
size_t DecodeUtf8(absl::string_view text, size_t pos, uint32_t* cp) {
  const uint8_t b0 = static_cast<uint8_t>(text[pos]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  const size_t n = utf8::SequenceLength(b0);
  if (n == 1 || b0 < 0xC2 || b0 > 0xF4 || text.size() - pos < n) return 0;
  uint32_t value = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    const uint8_t b = static_cast<uint8_t>(text[pos + i]);
    if (!IsContinuation(b)) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  // The minimum of each length rules out overlongs; the rest are surrogates and > U+10FFFF.
  constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMinimum[n] || (value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) return 0;
  *cp = value;
  return n;
}

// A parsed expression and its height (a leaf is 1), so nesting is bounded as it is built.
struct Item {
  GrammarExpr expr;
  int32_t height = 1;
};

class GbnfParser {
 public:
  GbnfParser(absl::string_view text, const GrammarLimits& limits, GrammarBuilder& builder,
             absl::flat_hash_map<std::string, int32_t>& rules_by_name)
      : text_(text), limits_(limits), builder_(builder), rules_by_name_(rules_by_name) {}

  // Parses every rule and defines it in the builder.
  absl::Status Parse();
  // kInvalidArgument naming the first reference (in the text) to a rule the text never
  // defines.
  absl::Status CheckReferencesDefined() const;
  bool Defines(const std::string& name) const { return defined_at_.contains(name); }

 private:
  absl::Status CheckText() const;
  absl::Status ParseRule();
  absl::StatusOr<Item> ParseAlternates(bool nested, int32_t depth);
  absl::StatusOr<Item> ParseSequence(bool nested, int32_t depth);
  absl::StatusOr<Item> ParseGroup(int32_t depth);
  absl::StatusOr<Item> ParseLiteral();
  absl::StatusOr<Item> ParseClass();
  absl::Status ParseRepetition(bool nested, Item* item);
  absl::StatusOr<int64_t> ParseCount();
  absl::StatusOr<uint32_t> ParseChar();
  absl::StatusOr<uint32_t> ParseHexEscape(int digits);
  std::string ParseName();
  // The builder id of rule `name`, declared on first sight.
  int32_t RuleId(std::string name);
  // Wraps `children` in a sequence or choice (one child stands for itself, none is empty).
  absl::StatusOr<Item> Combine(GrammarExpr::Kind kind, std::vector<Item> children, size_t at);
  absl::Status CheckHeight(const Item& item, size_t at) const;
  void SkipSpace(bool newline_ok);

  bool AtEnd() const { return pos_ >= text_.size(); }
  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  // "line 3, column 7" for byte offset `at` (columns count code points).
  std::string Where(size_t at) const;
  // What is at `at`, for messages: "'x'", "a newline", "the end of the text", "U+00E9".
  std::string Found(size_t at) const;
  absl::Status Error(size_t at, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("GBNF ", Where(at), ": ", what));
  }

  absl::string_view text_;
  const GrammarLimits& limits_;
  GrammarBuilder& builder_;
  absl::flat_hash_map<std::string, int32_t>& rules_by_name_;
  size_t pos_ = 0;
  absl::flat_hash_map<std::string, size_t> defined_at_;     // rule -> offset of its name
  absl::flat_hash_map<std::string, size_t> referenced_at_;  // rule -> its first reference
};

std::string GbnfParser::Where(size_t at) const {
  at = std::min(at, text_.size());
  const absl::string_view before = text_.substr(0, at);
  const size_t last_newline = before.rfind('\n');
  const size_t line_start = last_newline == absl::string_view::npos ? 0 : last_newline + 1;
  const int64_t line = std::count(before.begin(), before.end(), '\n') + 1;
  int64_t column = 1;
  for (size_t i = line_start; i < at; ++i) {
    if (!IsContinuation(static_cast<uint8_t>(text_[i]))) ++column;
  }
  return absl::StrCat("line ", line, ", column ", column);
}

std::string GbnfParser::Found(size_t at) const {
  if (at >= text_.size()) return "the end of the text";
  const char c = text_[at];
  if (c == '\n' || c == '\r') return "a newline";
  uint32_t cp = 0;
  if (DecodeUtf8(text_, at, &cp) == 0) return absl::StrFormat("byte 0x%02X", c & 0xFF);
  if (cp > 0x20 && cp < 0x7F) return absl::StrCat("'", absl::string_view(&c, 1), "'");
  return absl::StrFormat("U+%04X", cp);
}

absl::Status GbnfParser::CheckText() const {
  if (text_.size() > kMaxGbnfBytes) {
    return absl::InvalidArgumentError(absl::StrCat("GBNF grammar is ", text_.size(),
                                                   " bytes, past the limit of ", kMaxGbnfBytes,
                                                   " bytes (kMaxGbnfBytes, 1 MiB)"));
  }
  uint32_t cp = 0;
  for (size_t at = 0; at < text_.size();) {
    const size_t n = DecodeUtf8(text_, at, &cp);
    if (n == 0) return Error(at, absl::StrCat("the text is not valid UTF-8 (at byte ", at, ")"));
    at += n;
  }
  return absl::OkStatus();
}

void GbnfParser::SkipSpace(bool newline_ok) {
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
      ++pos_;
    } else if (c == '#') {
      while (!AtEnd() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
    } else {
      break;
    }
  }
}

absl::Status GbnfParser::Parse() {
  RETURN_IF_ERROR(CheckText());
  SkipSpace(/*newline_ok=*/true);
  while (!AtEnd()) RETURN_IF_ERROR(ParseRule());
  return absl::OkStatus();
}

std::string GbnfParser::ParseName() {
  const size_t start = pos_;
  while (!AtEnd() && IsNameChar(text_[pos_])) ++pos_;
  return std::string(text_.substr(start, pos_ - start));
}

absl::Status GbnfParser::ParseRule() {
  const size_t name_at = pos_;
  const std::string name = ParseName();
  if (name.empty()) {
    if (At('|')) {
      return Error(pos_,
                   "expecting a rule name, found '|': an alternative continues on the next line "
                   "only after a '|' that ends a line, or inside parentheses");
    }
    return Error(pos_, absl::StrCat("expecting a rule name (letters, digits, '-', '_'), found ",
                                    Found(pos_)));
  }
  SkipSpace(/*newline_ok=*/false);
  if (text_.substr(pos_, 3) != "::=") {
    return Error(pos_, absl::StrCat("expecting '::=' after the rule name '", name, "', found ",
                                    Found(pos_)));
  }
  pos_ += 3;
  SkipSpace(/*newline_ok=*/true);
  ASSIGN_OR_RETURN(Item body, ParseAlternates(/*nested=*/false, /*depth=*/0));
  if (At('\r') || At('\n')) {
    pos_ += text_.substr(pos_, 2) == "\r\n" ? 2 : 1;
  } else if (!AtEnd()) {
    if (At(')')) return Error(pos_, "unmatched ')'");
    return Error(pos_, absl::StrCat("expecting a newline or the end of the text after the body "
                                    "of rule '",
                                    name, "', found ", Found(pos_)));
  }
  SkipSpace(/*newline_ok=*/true);

  const auto [first, inserted] = defined_at_.try_emplace(name, name_at);
  if (!inserted) {
    return Error(name_at, absl::StrCat("rule '", name, "' is defined twice (first at ",
                                       Where(first->second), ")"));
  }
  const int32_t id = RuleId(name);
  const absl::Status defined = builder_.DefineRule(id, std::move(body.expr));
  if (!defined.ok()) {
    return absl::Status(defined.code(), absl::StrCat("GBNF ", Where(name_at), ": rule '", name,
                                                     "': ", defined.message()));
  }
  return absl::OkStatus();
}

int32_t GbnfParser::RuleId(std::string name) {
  auto it = rules_by_name_.find(name);
  if (it == rules_by_name_.end()) {
    const int32_t id = builder_.AddRule(name);
    it = rules_by_name_.emplace(std::move(name), id).first;
  }
  return it->second;
}

absl::Status GbnfParser::CheckHeight(const Item& item, size_t at) const {
  if (item.height <= limits_.max_nesting) return absl::OkStatus();
  return Error(at, absl::StrCat("expressions nest deeper than the limit max_nesting (",
                                limits_.max_nesting, ")"));
}

absl::StatusOr<Item> GbnfParser::Combine(GrammarExpr::Kind kind, std::vector<Item> children,
                                         size_t at) {
  if (children.empty()) return Item{GrammarExpr::Empty(), 1};
  if (children.size() == 1) return std::move(children[0]);
  Item out;
  std::vector<GrammarExpr> exprs;
  exprs.reserve(children.size());
  for (Item& child : children) {
    out.height = std::max(out.height, child.height + 1);
    exprs.push_back(std::move(child.expr));
  }
  out.expr = kind == GrammarExpr::Kind::kChoice ? GrammarExpr::Choice(std::move(exprs))
                                                : GrammarExpr::Sequence(std::move(exprs));
  RETURN_IF_ERROR(CheckHeight(out, at));
  return out;
}

absl::StatusOr<Item> GbnfParser::ParseAlternates(bool nested, int32_t depth) {
  const size_t start = pos_;
  std::vector<Item> alternatives;
  ASSIGN_OR_RETURN(Item first, ParseSequence(nested, depth));
  alternatives.push_back(std::move(first));
  while (At('|')) {
    ++pos_;
    SkipSpace(/*newline_ok=*/true);
    ASSIGN_OR_RETURN(Item next, ParseSequence(nested, depth));
    alternatives.push_back(std::move(next));
  }
  return Combine(GrammarExpr::Kind::kChoice, std::move(alternatives), start);
}

absl::StatusOr<Item> GbnfParser::ParseSequence(bool nested, int32_t depth) {
  const size_t start = pos_;
  std::vector<Item> items;
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (items.empty()) {
        return Error(pos_, absl::StrCat("expecting an item before '", absl::string_view(&c, 1),
                                        "' to repeat"));
      }
      RETURN_IF_ERROR(ParseRepetition(nested, &items.back()));
      continue;
    }
    absl::StatusOr<Item> item;
    if (c == '"') {
      item = ParseLiteral();
    } else if (c == '[') {
      item = ParseClass();
    } else if (c == '(') {
      item = ParseGroup(depth);
    } else if (c == '.') {
      ++pos_;
      item = Item{GrammarExpr::AnyChar(), 1};
    } else if (IsNameChar(c)) {
      const size_t name_at = pos_;
      std::string name = ParseName();
      referenced_at_.try_emplace(name, name_at);
      item = Item{GrammarExpr::Rule(RuleId(std::move(name))), 1};
    } else if (c == '<' || c == '!') {
      return Error(pos_,
                   "token references ('<[123]>', '<think>', '!<...>') match token ids, not "
                   "text, and are not supported; write the text as a string literal");
    } else {
      break;
    }
    if (!item.ok()) return item.status();
    items.push_back(*std::move(item));
    SkipSpace(nested);
  }
  return Combine(GrammarExpr::Kind::kSequence, std::move(items), start);
}

absl::StatusOr<Item> GbnfParser::ParseGroup(int32_t depth) {
  const size_t open = pos_;
  if (depth + 1 > limits_.max_nesting) {
    return Error(open, absl::StrCat("parentheses nest deeper than the limit max_nesting (",
                                    limits_.max_nesting, ")"));
  }
  ++pos_;
  SkipSpace(/*newline_ok=*/true);
  ASSIGN_OR_RETURN(Item inner, ParseAlternates(/*nested=*/true, depth + 1));
  if (!At(')')) {
    return Error(pos_, absl::StrCat("expecting ')' to close the group opened at ", Where(open),
                                    ", found ", Found(pos_)));
  }
  ++pos_;
  return inner;
}

absl::StatusOr<Item> GbnfParser::ParseLiteral() {
  const size_t open = pos_++;
  std::string bytes;
  while (!At('"')) {
    if (AtEnd()) return Error(open, "unterminated string literal: expecting a closing '\"'");
    ASSIGN_OR_RETURN(const uint32_t cp, ParseChar());
    utf8::Append(cp, &bytes);
  }
  ++pos_;
  if (bytes.empty()) return Item{GrammarExpr::Empty(), 1};
  return Item{GrammarExpr::Literal(std::move(bytes)), 1};
}

absl::StatusOr<Item> GbnfParser::ParseClass() {
  const size_t open = pos_++;
  const bool negated = At('^');
  if (negated) ++pos_;
  std::vector<CodepointRange> ranges;
  while (!At(']')) {
    if (AtEnd()) return Error(open, "unterminated character class: expecting a closing ']'");
    const size_t range_at = pos_;
    ASSIGN_OR_RETURN(const uint32_t lo, ParseChar());
    uint32_t hi = lo;
    // A '-' right before the closing ']' is itself a member, as in llama.cpp.
    if (At('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
      ++pos_;
      ASSIGN_OR_RETURN(hi, ParseChar());
      if (hi < lo) {
        return Error(range_at, absl::StrFormat("reversed range U+%04X-U+%04X in a character "
                                               "class: expecting the lower end first",
                                               lo, hi));
      }
    }
    ranges.push_back(CodepointRange{lo, hi});
  }
  ++pos_;
  if (ranges.empty()) {
    return Error(open, absl::StrCat("empty character class '", negated ? "[^]" : "[]",
                                    "': expecting at least one character or range"));
  }
  return Item{GrammarExpr::CharClass(std::move(ranges), negated), 1};
}

absl::StatusOr<uint32_t> GbnfParser::ParseChar() {
  if (!At('\\')) {
    uint32_t cp = 0;
    pos_ += DecodeUtf8(text_, pos_, &cp);  // never 0: CheckText validated the text
    return cp;
  }
  const size_t escape_at = pos_++;
  if (AtEnd()) return Error(escape_at, "unterminated escape: expecting a character after '\\'");
  const char c = text_[pos_++];
  switch (c) {
    case 'x':
      return ParseHexEscape(2);
    case 'u':
      return ParseHexEscape(4);
    case 'U':
      return ParseHexEscape(8);
    case 'n':
      return uint32_t{'\n'};
    case 't':
      return uint32_t{'\t'};
    case 'r':
      return uint32_t{'\r'};
    case '\\':
    case '"':
    case '[':
    case ']':
    case '-':
      return static_cast<uint32_t>(c);
    default:
      return Error(escape_at, absl::StrCat("unknown escape '\\' followed by ", Found(pos_ - 1),
                                           ": expecting one of \\n \\t \\r \\\\ \\\" \\[ \\] "
                                           "\\- \\xHH \\uHHHH \\UHHHHHHHH"));
  }
}

absl::StatusOr<uint32_t> GbnfParser::ParseHexEscape(int digits) {
  const size_t escape_at = pos_ - 2;
  uint32_t value = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = AtEnd() ? '\0' : text_[pos_];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) {
      return Error(pos_, absl::StrCat("expecting ", digits, " hex digits in the escape at ",
                                      Where(escape_at), ", found ", Found(pos_)));
    }
    value = (value << 4) | static_cast<uint32_t>(digit);
    ++pos_;
  }
  if ((value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) {
    return Error(escape_at, absl::StrFormat("escape '%s' is not a Unicode scalar value "
                                            "(expecting U+0000..U+D7FF or U+E000..U+10FFFF)",
                                            text_.substr(escape_at, pos_ - escape_at)));
  }
  return value;
}

absl::StatusOr<int64_t> GbnfParser::ParseCount() {
  const size_t at = pos_;
  if (AtEnd() || !IsDigit(text_[pos_])) {
    return Error(pos_, absl::StrCat("expecting a repetition count, found ", Found(pos_)));
  }
  int64_t value = 0;
  while (!AtEnd() && IsDigit(text_[pos_])) {
    value = std::min(kCountCeiling, value * 10 + (text_[pos_++] - '0'));
  }
  if (value > limits_.max_repeat) {
    return Error(at, absl::StrCat("repetition count ", text_.substr(at, pos_ - at),
                                  " is past the limit max_repeat (", limits_.max_repeat, ")"));
  }
  return value;
}

absl::Status GbnfParser::ParseRepetition(bool nested, Item* item) {
  const size_t at = pos_;
  const char op = text_[pos_++];
  int64_t min = op == '+' ? 1 : 0;
  int64_t max = op == '?' ? 1 : kUnbounded;
  if (op == '{') {
    SkipSpace(nested);
    ASSIGN_OR_RETURN(min, ParseCount());
    SkipSpace(nested);
    max = min;
    const bool bounded = !At(',');
    if (!bounded) {
      ++pos_;
      SkipSpace(nested);
      max = kUnbounded;
      if (!AtEnd() && IsDigit(text_[pos_])) {
        const size_t max_at = pos_;
        ASSIGN_OR_RETURN(max, ParseCount());
        if (max < min) {
          return Error(max_at,
                       absl::StrCat("repetition maximum ", max, " is below its minimum ", min));
        }
        SkipSpace(nested);
      }
    }
    if (!At('}')) {
      return Error(pos_, absl::StrCat("expecting ", bounded ? "',' or " : "",
                                      "'}' to end the repetition opened at ", Where(at), ", found ",
                                      Found(pos_)));
    }
    ++pos_;
  }
  SkipSpace(nested);
  if (max == 0) {  // x{0}: nothing (the references in x still count as references)
    *item = Item{GrammarExpr::Empty(), 1};
    return absl::OkStatus();
  }
  item->expr = GrammarExpr::Repeat(std::move(item->expr), static_cast<int32_t>(min),
                                   static_cast<int32_t>(max));
  item->height += 1;
  return CheckHeight(*item, at);
}

absl::Status GbnfParser::CheckReferencesDefined() const {
  const std::pair<const std::string, size_t>* first = nullptr;
  for (const auto& reference : referenced_at_) {
    if (Defines(reference.first)) continue;
    if (first == nullptr || reference.second < first->second) first = &reference;
  }
  if (first == nullptr) return absl::OkStatus();
  return Error(first->second,
               absl::StrCat("rule '", first->first, "' is referenced but never defined"));
}

}  // namespace

absl::Status AddGbnfRules(absl::string_view text, GrammarBuilder& builder,
                          absl::flat_hash_map<std::string, int32_t>* rules_by_name,
                          const GrammarLimits& limits) {
  GbnfParser parser(text, limits, builder, *rules_by_name);
  return parser.Parse();
}

absl::StatusOr<Grammar> ParseGbnf(absl::string_view text, const GrammarLimits& limits) {
  GrammarBuilder builder(limits);
  absl::flat_hash_map<std::string, int32_t> rules_by_name;
  GbnfParser parser(text, limits, builder, rules_by_name);
  RETURN_IF_ERROR(parser.Parse());
  RETURN_IF_ERROR(parser.CheckReferencesDefined());
  if (!parser.Defines("root")) {
    return absl::InvalidArgumentError(
        "GBNF grammar has no rule 'root': expecting a rule 'root ::= ...' (the start rule)");
  }
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(rules_by_name.at("root"));
  if (!grammar.ok()) {
    return absl::Status(grammar.status().code(),
                        absl::StrCat("GBNF grammar: ", grammar.status().message()));
  }
  return grammar;
}

}  // namespace tandem
