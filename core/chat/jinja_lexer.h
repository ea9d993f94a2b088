// Splits a Jinja template into tokens: literal text (whitespace control already applied) and
// the tokens inside {{ ... }} and {% ... %} tags. Comments and {% raw %} are resolved here.
//
// Whitespace rules follow Jinja 3: `{%-`/`{{-`/`{#-` strip all whitespace before the tag,
// `-%}`/`-}}`/`-#}` all whitespace after it; with trim_blocks the first newline after a block or
// comment tag is dropped (unless `+%}`); with lstrip_blocks spaces and tabs between the start of
// a line and a block or comment tag are dropped (unless `{%+`). Newlines are normalised to
// "\n" and one trailing newline is dropped, as Jinja does by default.
#ifndef TANDEM_CORE_CHAT_JINJA_LEXER_H_
#define TANDEM_CORE_CHAT_JINJA_LEXER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::chat::jinja {

// 1-based line and column (in characters) in the template source.
struct Position {
  int line = 0;
  int column = 0;
};

// kInvalidArgument "template error at L:C: <message>".
absl::Status ErrorAt(Position pos, absl::string_view message);
// Whether `status` already names a template position (ErrorAt made it).
bool HasPosition(const absl::Status& status);
// `status` with `pos` attached, unless it is OK, has a position already or is not a template
// error (kResourceExhausted limits keep their own message).
absl::Status AttachPosition(absl::Status status, Position pos);

struct Token {
  enum class Type {
    kText,        // literal output
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // text holds the decoded value
    kInt,
    kFloat,
    kOperator,  // text holds the operator: "+", "//", "==", "(", ...
    kEof,
  };
  Type type;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  Position pos;
};

struct LexerOptions {
  bool trim_blocks = false;
  bool lstrip_blocks = false;
  bool keep_trailing_newline = false;
};

// Tokenises `source`; the last token is kEof. Errors (unterminated tags or strings, stray
// characters) carry their position.
absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view source, const LexerOptions& options);

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_LEXER_H_
