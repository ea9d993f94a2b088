// The output constraint of an OpenAI-style request body, as a tandem.v1.Constraint: OpenAI's
// `response_format` and Tandem's own `grammar` and `regex` fields (chat and completions alike).
//
//   response_format {"type": "text"}                  no constraint
//   response_format {"type": "json_object"}           any JSON object
//   response_format {"type": "json_schema", "json_schema": {"name": N, "schema": {...},
//                    "strict": B, "description": D}}  an instance of the schema
//   grammar "root ::= ..."                            a GBNF grammar (llama.cpp's format)
//   regex "[0-9]+"                                    the whole output matches it
//
// The shape is checked here, as OpenAI checks it: `name` is required (1 to 64 of a-z, A-Z,
// 0-9, '_' and '-'), `schema` is required and an object, `strict` a boolean and `description`
// a string (both accepted, not used: the output always matches the schema), no other field,
// and a grammar is not empty. What is inside the schema, grammar or regex is for the
// coordinator's compiler to judge (it names the culprit). At most one constraint per request:
// a second constraint field is refused naming both. A null field counts as unset.
//
// Errors are kInvalidArgument naming the field, worded like openai_request.h's.
// Thread-compatible: one per request body being parsed.
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_CONSTRAINT_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_CONSTRAINT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "tandem/v1/common.pb.h"

namespace tandem {

class OpenAiConstraintParser {
 public:
  // `out` receives the constraint; it must outlive the parser.
  explicit OpenAiConstraintParser(v1::Constraint* out) : out_(out) {}

  // Whether `key` is one of the constraint fields (response_format, grammar, regex).
  static bool IsConstraintField(absl::string_view key);

  // Reads one constraint field (IsConstraintField(key)).
  absl::Status Field(absl::string_view key, const json::Value& value);

  // The OpenAI Responses API's `text.format` (`field`): {"type": "text"}, {"type":
  // "json_object"}, or {"type": "json_schema", "name", "schema", "strict", "description"}
  // flat, checked as response_format is; errors name `field`.
  absl::Status FlatFormat(absl::string_view field, const json::Value& value);

 private:
  absl::Status ResponseFormat(const json::Value& value);
  // The json_schema object at `field`; `skip_type`: its "type" member belongs to the format.
  absl::Status JsonSchema(absl::string_view field, const json::Value& value, bool skip_type,
                          absl::string_view claim);
  // Records that `field` sets the constraint; refuses a second one.
  absl::Status Claim(absl::string_view field);

  v1::Constraint* out_;
  std::string field_;  // the field that set the constraint, for the error on a second one
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_CONSTRAINT_H_
