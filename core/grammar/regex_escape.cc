#include "core/grammar/regex_escape.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"

namespace tandem {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHighSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDBFF; }
bool IsLowSurrogate(uint32_t cp) { return cp >= 0xDC00 && cp <= 0xDFFF; }

// The control-character escapes \n \r \t \f \v; false for any other letter.
bool ControlEscape(char letter, uint32_t* codepoint) {
  constexpr absl::string_view kLetters = "nrtfv";
  constexpr absl::string_view kCodes = "\n\r\t\f\v";
  const size_t index = kLetters.find(letter);
  if (index == absl::string_view::npos) return false;
  *codepoint = static_cast<uint8_t>(kCodes[index]);
  return true;
}

}  // namespace

absl::Status RegexError(size_t offset, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("regex at byte ", offset, ": ", what));
}

uint32_t RegexEscapeReader::Decode(size_t* pos) const {
  const size_t length = utf8::CharLength(pattern_, *pos);
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(pattern_[*pos + i]); };
  uint32_t cp = length == 1 ? byte(0) : byte(0) & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (byte(i) & 0x3F);
  *pos += length;
  return cp;
}

absl::string_view RegexEscapeReader::Quote(size_t offset, size_t length) const {
  return pattern_.substr(offset, length);
}

int64_t RegexEscapeReader::Hex(size_t pos, size_t digits) const {
  if (pos > pattern_.size() || pattern_.size() - pos < digits) return -1;
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const int digit = HexValue(pattern_[pos + i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

absl::StatusOr<ClassItem> RegexEscapeReader::Read(size_t* pos, bool in_class) const {
  const size_t offset = *pos;
  if (offset + 1 >= pattern_.size()) return RegexError(offset, "the pattern ends with a lone '\\'");
  const char letter = pattern_[offset + 1];
  *pos = offset + 2;
  ClassItem item;
  if (ClassEscapeSet(letter, &item.set)) {
    item.is_set = true;
    return item;
  }
  if (ControlEscape(letter, &item.codepoint)) return item;
  if (letter == 'b' && in_class) {
    item.codepoint = '\b';  // [\b] is backspace
    return item;
  }
  RETURN_IF_ERROR(RefuseUnsupported(offset));
  if (letter == '0' || letter == 'x' || letter == 'u' || letter == 'c') {
    ASSIGN_OR_RETURN(item.codepoint, ReadCode(offset, pos));
    return item;
  }
  // Escaped ASCII punctuation (\. \* \- \/ ...) stands for itself; an escaped letter or a
  // code point past ASCII that means nothing is refused rather than guessed at.
  const uint8_t byte = static_cast<uint8_t>(letter);
  if (byte >= 0x20 && byte < 0x7F && !IsAsciiLetter(letter) && !IsDigit(letter)) {
    item.codepoint = byte;
    return item;
  }
  return RegexError(offset,
                    absl::StrCat("unknown escape '",
                                 Quote(offset, 1 + utf8::CharLength(pattern_, offset + 1)), "'"));
}

// The escapes a grammar cannot express: backreferences, word boundaries, property escapes.
absl::Status RegexEscapeReader::RefuseUnsupported(size_t offset) const {
  const char letter = pattern_[offset + 1];
  switch (letter) {
    case 'b':
    case 'B':
      return RegexError(offset,
                        absl::StrCat("word boundary '", Quote(offset, 2), "' is not supported"));
    case 'k':
      return RegexError(offset, "named backreference '\\k' is not supported");
    case 'p':
    case 'P':
      return RegexError(offset, absl::StrCat("Unicode property escape '", Quote(offset, 2),
                                             "' is not supported"));
    default:
      break;
  }
  if (letter >= '1' && letter <= '9') {
    size_t end = offset + 2;
    while (end < pattern_.size() && IsDigit(pattern_[end])) ++end;
    return RegexError(
        offset, absl::StrCat("backreference '", Quote(offset, end - offset), "' is not supported"));
  }
  return absl::OkStatus();
}

// \0, \xHH, \u... or \cX at `offset`; *pos is past the letter.
absl::StatusOr<uint32_t> RegexEscapeReader::ReadCode(size_t offset, size_t* pos) const {
  switch (pattern_[offset + 1]) {
    case '0':
      if (*pos < pattern_.size() && IsDigit(pattern_[*pos])) {
        return RegexError(offset,
                          absl::StrCat("octal escape '", Quote(offset, 3), "' is not supported"));
      }
      return 0;
    case 'x': {
      const int64_t value = Hex(*pos, 2);
      if (value < 0) return RegexError(offset, "'\\x' needs two hex digits");
      *pos += 2;
      return static_cast<uint32_t>(value);
    }
    case 'c':
      if (*pos < pattern_.size() && IsAsciiLetter(pattern_[*pos])) {
        return static_cast<uint32_t>(pattern_[(*pos)++]) % 32;
      }
      return RegexError(offset, "'\\c' needs a letter A-Z or a-z");
    default:
      return ReadUnicode(offset, pos);
  }
}

// \uHHHH (a high surrogate followed by \uHHHH of a low one is one code point) or \u{H...}, at
// `offset`; *pos is past "\u".
absl::StatusOr<uint32_t> RegexEscapeReader::ReadUnicode(size_t offset, size_t* pos) const {
  int64_t value = -1;
  if (*pos < pattern_.size() && pattern_[*pos] == '{') {
    size_t end = *pos + 1;
    value = 0;
    while (end < pattern_.size() && HexValue(pattern_[end]) >= 0) {
      value = std::min<int64_t>(value * 16 + HexValue(pattern_[end]), int64_t{1} << 32);
      ++end;
    }
    if (end == *pos + 1 || end >= pattern_.size() || pattern_[end] != '}') {
      return RegexError(offset, "'\\u{' needs hex digits and a closing '}'");
    }
    if (value > kMaxCodepoint) {
      return RegexError(offset,
                        absl::StrCat("'", Quote(offset, end + 1 - offset), "' is past U+10FFFF"));
    }
    *pos = end + 1;
  } else {
    value = Hex(*pos, 4);
    if (value < 0) return RegexError(offset, "'\\u' needs four hex digits or {hex digits}");
    *pos += 4;
    const int64_t low =
        absl::string_view(pattern_.substr(*pos, 2)) == "\\u" ? Hex(*pos + 2, 4) : -1;
    if (IsHighSurrogate(value) && low >= 0 && IsLowSurrogate(low)) {
      value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00);
      *pos += 6;
    }
  }
  const uint32_t codepoint = static_cast<uint32_t>(value);
  if (IsHighSurrogate(codepoint) || IsLowSurrogate(codepoint)) {
    return RegexError(offset, absl::StrCat("lone surrogate '", Quote(offset, *pos - offset),
                                           "' cannot match UTF-8 text"));
  }
  return codepoint;
}

absl::Status RegexEscapeReader::SkipGroupName(size_t* pos, size_t group) const {
  const size_t start = *pos;
  while (*pos < pattern_.size() && pattern_[*pos] != '>') {
    const char c = pattern_[*pos];
    const bool ascii_ok = IsAsciiLetter(c) || c == '_' || c == '$' || (IsDigit(c) && *pos > start);
    if (static_cast<uint8_t>(c) < 0x80 && !ascii_ok) {
      return RegexError(group,
                        absl::StrCat("group name has '", Quote(*pos, 1), "' at byte ", *pos));
    }
    *pos += utf8::CharLength(pattern_, *pos);
  }
  if (*pos >= pattern_.size()) return RegexError(group, "group name '(?<' is never closed by '>'");
  if (*pos == start) return RegexError(group, "empty group name '(?<>'");
  ++*pos;
  return absl::OkStatus();
}

}  // namespace tandem
