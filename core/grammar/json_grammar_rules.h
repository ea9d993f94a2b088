// The generic JSON rules the JSON Schema compiler (json_schema_compiler.h) builds on: bounded
// whitespace, strings (JSON syntax, and a canonical form for object keys), numbers, any value,
// and the string formats. Each rule is added to the builder on first use, so a grammar holds
// only the rules it references. Internal to core/grammar.
#ifndef TANDEM_CORE_GRAMMAR_JSON_GRAMMAR_RULES_H_
#define TANDEM_CORE_GRAMMAR_JSON_GRAMMAR_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {

// The canonical JSON encoding of one code point inside a string, as object keys are written
// (raw, or \" \\ \b \f \n \r \t, or \u00xx in lower case for other control characters).
std::string CanonicalJsonChar(uint32_t cp);
// The canonical encoding of a whole UTF-8 string (valid UTF-8), without quotes.
std::string CanonicalJsonChars(absl::string_view utf8);
// The code points of valid UTF-8 text.
std::vector<uint32_t> DecodeUtf8(absl::string_view utf8);

class JsonGrammarRules {
 public:
  // `max_whitespace` characters of JSON whitespace where JSON allows it (0: none).
  JsonGrammarRules(GrammarBuilder& builder, int32_t max_whitespace);

  // Each returns GrammarExpr::Rule of a rule added on first use.
  GrammarExpr Whitespace();   // kEmpty when max_whitespace is 0
  GrammarExpr StringChar();   // one character of a JSON string's content, any valid encoding
  GrammarExpr String();       // a JSON string, quotes included
  GrammarExpr KeyChar();      // one character of a key, canonically encoded
  GrammarExpr Number();
  GrammarExpr Integer();
  GrammarExpr Boolean();
  GrammarExpr Null();
  GrammarExpr Value();        // any JSON value
  GrammarExpr Object();       // any JSON object
  GrammarExpr Array();        // any JSON array
  // String contents in a format ("date", "time", "date-time", "uuid", "email"), quotes
  // excluded; false if the format is unknown.
  bool Format(absl::string_view name, GrammarExpr* out);

  // One canonically encoded key character that is none of `excluded`.
  GrammarExpr KeyCharExcept(const std::vector<uint32_t>& excluded) const;

  // `open` elements separated by commas `close`, with whitespace: [ws (elem (ws , ws elem)* ws)?]
  GrammarExpr Bracketed(absl::string_view open, GrammarExpr element, absl::string_view close);
  // `"key"` ws `:` ws value.
  GrammarExpr Member(GrammarExpr key, GrammarExpr value);

  // A helper rule (named for messages) with `body`; errors are kept for status().
  int32_t AddRule(std::string name, GrammarExpr body);
  // The first error from defining a rule (limits), else OK.
  const absl::Status& status() const { return status_; }
  GrammarBuilder& builder() { return builder_; }

 private:
  // Rule ids by kind, -1 until first use.
  enum Kind { kWs, kStringChar, kString, kKeyChar, kNumber, kInteger, kBoolean, kNull, kValue,
              kObject, kArray, kDate, kTime, kDateTime, kUuid, kEmail, kKindCount };
  GrammarExpr Get(Kind kind);
  GrammarExpr Body(Kind kind);
  GrammarExpr DateBody();
  GrammarExpr TimeBody();
  GrammarExpr EmailBody();

  GrammarBuilder& builder_;
  int32_t max_whitespace_;
  int32_t ids_[kKindCount];
  absl::Status status_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_JSON_GRAMMAR_RULES_H_
