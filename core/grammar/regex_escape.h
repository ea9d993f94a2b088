// Reads a regular expression's escapes (\n, \x41, \u{1F600}, \d, \.) and code points, and
// refuses the escapes a grammar cannot express (backreferences, word boundaries, Unicode
// properties) or that mean nothing, naming them and their byte offset. Internal to
// regex_compiler.cc.
#ifndef TANDEM_CORE_GRAMMAR_REGEX_ESCAPE_H_
#define TANDEM_CORE_GRAMMAR_REGEX_ESCAPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/grammar/regex_char_class.h"

namespace tandem {

// kInvalidArgument "regex at byte <offset>: <what>".
absl::Status RegexError(size_t offset, absl::string_view what);

// What an escape or a class member stands for: one code point, or a set (\d, \W ...).
struct ClassItem {
  bool is_set = false;
  uint32_t codepoint = 0;
  CodepointSet set;
};

class RegexEscapeReader {
 public:
  // `pattern` is valid UTF-8 and outlives the reader.
  explicit RegexEscapeReader(absl::string_view pattern) : pattern_(pattern) {}

  // The code point at *pos (not past the end), moving *pos past it.
  uint32_t Decode(size_t* pos) const;
  // The escape starting with the backslash at *pos, moving *pos past it; `in_class`: inside
  // [...], where \b is backspace.
  absl::StatusOr<ClassItem> Read(size_t* pos, bool in_class) const;
  // A group name and its '>' at *pos (after "(?<"), moving *pos past them; `group` is the
  // group's offset, for messages.
  absl::Status SkipGroupName(size_t* pos, size_t group) const;

 private:
  absl::Status RefuseUnsupported(size_t offset) const;
  absl::StatusOr<uint32_t> ReadCode(size_t offset, size_t* pos) const;
  absl::StatusOr<uint32_t> ReadUnicode(size_t offset, size_t* pos) const;
  // The value of `digits` hex digits at pos, or -1 if there are fewer.
  int64_t Hex(size_t pos, size_t digits) const;
  // The escape at `offset` as written, for messages.
  absl::string_view Quote(size_t offset, size_t length) const;

  absl::string_view pattern_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_REGEX_ESCAPE_H_
