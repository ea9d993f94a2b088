// What a request asks its output to match, as the interfaces carry it (OpenAI's
// response_format, Tandem's `grammar` and `regex` fields, the gRPC Constraint, tandem-chat's
// flags), before it is compiled (compiled_constraint.h).
#ifndef TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_
#define TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tandem {

struct ConstraintSpec {
  enum class Kind {
    kNone,        // unconstrained
    kJsonObject,  // any JSON object (OpenAI's {"type": "json_object"}); `text` unused
    kJsonSchema,  // `text` is a JSON Schema document
    kGrammar,     // `text` is a GBNF grammar (llama.cpp's format; start rule `root`)
    kRegex,       // `text` is a regular expression the whole output must match
  };
  Kind kind = Kind::kNone;
  std::string text;

  bool empty() const { return kind == Kind::kNone; }
  bool operator==(const ConstraintSpec& other) const {
    return kind == other.kind && text == other.text;
  }
};

// "json_object", "json_schema", "grammar", "regex" or "none" (logs and metrics labels).
absl::string_view ConstraintKindName(ConstraintSpec::Kind kind);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_
