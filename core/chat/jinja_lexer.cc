#include "core/chat/jinja_lexer.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/base/utf8.h"

namespace tandem::chat::jinja {
namespace {

constexpr char kPositionPayload[] = "tandem.chat/template-position";

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options)
      : src_(std::move(source)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t tag = FindTagStart(pos);
      if (tag == std::string::npos) {
        EmitText(pos, src_.size());
        break;
      }
      char kind = src_[tag + 1];
      char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      size_t text_end = tag;
      if (modifier == '-') {
        while (text_end > pos && IsSpace(src_[text_end - 1])) --text_end;
      } else if (kind != '{' && modifier != '+' && options_.lstrip_blocks) {
        text_end = LstripEnd(pos, tag);
      }
      EmitText(pos, text_end);
      size_t body = tag + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      absl::StatusOr<size_t> next = kind == '#'   ? SkipComment(tag, body)
                                    : kind == '{' ? LexTag(tag, body, /*block=*/false)
                                                  : LexTag(tag, body, /*block=*/true);
      if (!next.ok()) return next.status();
      pos = *next;
    }
    tokens_.push_back(Token{Token::Type::kEof, "", 0, 0, PositionOf(src_.size())});
    return std::move(tokens_);
  }

 private:
  // Tokens are lexed in order, so counting goes on from the last position asked for on
  // the same line: linear in the source, where counting from the line start each time was
  // quadratic in a long one-line template.
  Position PositionOf(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line_start = *(it - 1);
    if (line_start != counted_line_start_ || offset < counted_offset_) {
      counted_line_start_ = counted_offset_ = line_start;
      counted_column_ = 1;
    }
    for (; counted_offset_ < offset && counted_offset_ < src_.size(); ++counted_offset_) {
      if ((static_cast<unsigned char>(src_[counted_offset_]) & 0xC0) != 0x80) ++counted_column_;
    }
    return Position{static_cast<int>(it - line_starts_.begin()), counted_column_};
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // lstrip_blocks: where the text before a block tag at `tag` ends once the spaces between
  // the line start and the tag are dropped.
  size_t LstripEnd(size_t text_start, size_t tag) const {
    size_t line_start = tag;
    while (line_start > text_start && src_[line_start - 1] != '\n') --line_start;
    bool at_line_start = line_start > text_start || text_start == 0 || src_[text_start - 1] == '\n';
    if (!at_line_start) return tag;
    for (size_t i = line_start; i < tag; ++i) {
      if (!IsSpace(src_[i])) return tag;
    }
    return line_start;
  }

  void EmitText(size_t begin, size_t end) {
    if (end <= begin) return;
    tokens_.push_back(
        Token{Token::Type::kText, src_.substr(begin, end - begin), 0, 0, PositionOf(begin)});
  }

  // After a tag closer ending at `pos`: applies `-` or trim_blocks.
  size_t AfterTag(size_t pos, char closer_modifier, bool trim) const {
    if (closer_modifier == '-') {
      while (pos < src_.size() && IsSpace(src_[pos])) ++pos;
    } else if (trim && closer_modifier != '+' && options_.trim_blocks && pos < src_.size() &&
               src_[pos] == '\n') {
      ++pos;
    }
    return pos;
  }

  absl::StatusOr<size_t> SkipComment(size_t tag, size_t body) {
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) return ErrorAt(PositionOf(tag), "unterminated comment");
    char modifier =
        end > body && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    return AfterTag(end + 2, modifier, /*trim=*/true);
  }

  // Lexes the inside of {{ }} or {% %} starting at `body`; returns where the text resumes.
  absl::StatusOr<size_t> LexTag(size_t tag, size_t body, bool block) {
    tokens_.push_back(Token{block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", 0, 0,
                            PositionOf(tag)});
    size_t first_token = tokens_.size();
    size_t pos = body;
    int depth = 0;  // open brackets: a closer inside them is an operator
    const char* closer = block ? "%}" : "}}";
    while (true) {
      while (pos < src_.size() && IsSpace(src_[pos])) ++pos;
      if (pos >= src_.size()) {
        return ErrorAt(PositionOf(tag), absl::StrCat("unterminated tag: expected '", closer, "'"));
      }
      if (depth == 0) {
        char m = src_[pos];
        bool has_modifier = (m == '-' || (block && m == '+'));
        size_t at = has_modifier ? pos + 1 : pos;
        if (src_.compare(at, 2, closer) == 0) {
          tokens_.push_back(Token{block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", 0, 0,
                                  PositionOf(pos)});
          size_t next = AfterTag(at + 2, has_modifier ? m : '\0', block);
          if (block && tokens_.size() == first_token + 2 &&
              tokens_[first_token].type == Token::Type::kName &&
              tokens_[first_token].text == "raw") {
            return LexRaw(tag, next);
          }
          return next;
        }
      }
      absl::Status s = LexToken(&pos, &depth);
      if (!s.ok()) return s;
    }
  }

  // {% raw %} ... {% endraw %}: the text between is literal.
  absl::StatusOr<size_t> LexRaw(size_t tag, size_t pos) {
    tokens_.resize(tokens_.size() - 3);  // drop the {% raw %} tokens
    for (size_t i = src_.find("{%", pos); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t j = i + 2;
      char open_modifier = j < src_.size() ? src_[j] : '\0';
      if (open_modifier == '-' || open_modifier == '+') ++j;
      while (j < src_.size() && IsSpace(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < src_.size() && IsSpace(src_[j])) ++j;
      char close_modifier = j < src_.size() ? src_[j] : '\0';
      if (close_modifier == '-' || close_modifier == '+') ++j;
      if (src_.compare(j, 2, "%}") != 0) continue;
      size_t text_end = i;
      if (open_modifier == '-') {
        while (text_end > pos && IsSpace(src_[text_end - 1])) --text_end;
      }
      EmitText(pos, text_end);
      return AfterTag(j + 2, close_modifier == '+' || close_modifier == '-' ? close_modifier : '\0',
                      /*trim=*/true);
    }
    return ErrorAt(PositionOf(tag), "unterminated raw block: expected '{% endraw %}'");
  }

  absl::Status LexToken(size_t* pos, int* depth) {
    size_t start = *pos;
    char c = src_[start];
    Position where = PositionOf(start);
    if (IsNameStart(c)) {
      size_t end = start;
      while (end < src_.size() && IsNameChar(src_[end])) ++end;
      tokens_.push_back(Token{Token::Type::kName, src_.substr(start, end - start), 0, 0, where});
      *pos = end;
      return absl::OkStatus();
    }
    if (IsDigit(c)) return LexNumber(pos, where);
    if (c == '\'' || c == '"') return LexString(pos, where);
    static constexpr const char* kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                                 "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                                 "]",  "{",  "}",  ",",  ".",  ":",  "|", ";"};
    for (const char* op : kOperators) {
      size_t len = std::char_traits<char>::length(op);
      if (src_.compare(start, len, op) == 0) {
        if (*op == '(' || *op == '[' || *op == '{') ++*depth;
        if ((*op == ')' || *op == ']' || *op == '}') && *depth > 0) --*depth;
        tokens_.push_back(Token{Token::Type::kOperator, op, 0, 0, where});
        *pos = start + len;
        return absl::OkStatus();
      }
    }
    return ErrorAt(where, absl::StrCat("unexpected character '", src_.substr(start, 1), "'"));
  }

  absl::Status LexNumber(size_t* pos, Position where) {
    size_t start = *pos;
    std::string digits;
    size_t i = start;
    bool is_float = false;
    auto take_digits = [&] {
      while (i < src_.size() && (IsDigit(src_[i]) || src_[i] == '_')) {
        if (src_[i] != '_') digits.push_back(src_[i]);
        ++i;
      }
    };
    take_digits();
    if (i + 1 < src_.size() && src_[i] == '.' && IsDigit(src_[i + 1])) {
      is_float = true;
      digits.push_back('.');
      ++i;
      take_digits();
    }
    if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
      size_t j = i + 1;
      if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
      if (j < src_.size() && IsDigit(src_[j])) {
        is_float = true;
        digits.append(src_, i, j - i);
        i = j;
        take_digits();
      }
    }
    Token token{is_float ? Token::Type::kFloat : Token::Type::kInt, digits, 0, 0, where};
    const char* first = digits.data();
    const char* last = first + digits.size();
    auto result = is_float ? std::from_chars(first, last, token.float_value)
                           : std::from_chars(first, last, token.int_value);
    if (result.ec != std::errc() || result.ptr != last) {
      return ErrorAt(where, absl::StrCat("number literal out of range: ", digits));
    }
    tokens_.push_back(std::move(token));
    *pos = i;
    return absl::OkStatus();
  }

  // A Python string literal; escapes decode as Python's unicode-escape does.
  absl::Status LexString(size_t* pos, Position where) {
    char quote = src_[*pos];
    std::string value;
    size_t i = *pos + 1;
    while (true) {
      if (i >= src_.size()) return ErrorAt(where, "unterminated string literal");
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) return ErrorAt(where, "unterminated string literal");
      char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n':
          value.push_back('\n');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
          value.push_back('\'');
          break;
        case '"':
          value.push_back('"');
          break;
        case '\n':
          break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            int h = i + k < src_.size() ? HexDigit(src_[i + k]) : -1;
            if (h < 0) return ErrorAt(PositionOf(i - 2), "truncated \\x, \\u or \\U escape");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return ErrorAt(PositionOf(i - 2), "escape is not a Unicode scalar value");
          }
          i += n;
          utf8::Append(cp, &value);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(src_[i++] - '0');
            }
            utf8::Append(cp, &value);
          } else {  // unknown escapes stay as written
            value.push_back('\\');
            value.push_back(e);
          }
      }
    }
    tokens_.push_back(Token{Token::Type::kString, std::move(value), 0, 0, where});
    *pos = i + 1;
    return absl::OkStatus();
  }

  std::string src_;
  const LexerOptions& options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  // PositionOf's cursor: the column of src_[counted_offset_] on the line at counted_line_start_.
  mutable size_t counted_line_start_ = 0;
  mutable size_t counted_offset_ = 0;
  mutable int counted_column_ = 1;
};

}  // namespace

absl::Status ErrorAt(Position pos, absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(
      absl::StrCat("template error at ", pos.line, ":", pos.column, ": ", message));
  status.SetPayload(kPositionPayload, absl::Cord(absl::StrCat(pos.line, ":", pos.column)));
  return status;
}

bool HasPosition(const absl::Status& status) {
  return status.GetPayload(kPositionPayload).has_value();
}

absl::Status AttachPosition(absl::Status status, Position pos) {
  if (status.ok() || HasPosition(status) || status.code() != absl::StatusCode::kInvalidArgument) {
    return status;
  }
  return ErrorAt(pos, status.message());
}

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view source, const LexerOptions& options) {
  std::string normalized = absl::StrReplaceAll(source, {{"\r\n", "\n"}, {"\r", "\n"}});
  if (!options.keep_trailing_newline && !normalized.empty() && normalized.back() == '\n') {
    normalized.pop_back();
  }
  return Lexer(std::move(normalized), options).Run();
}

}  // namespace tandem::chat::jinja
