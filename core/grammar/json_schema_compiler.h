// The JSON Schema front end: compiles a JSON Schema document (draft 2020-12, the subset that
// OpenAI's strict mode and vLLM/XGrammar accept) to a Grammar (grammar.h) of the JSON texts
// that validate against it.
//
//   ASSIGN_OR_RETURN(Grammar grammar, CompileJsonSchema(R"({"type": "object",
//       "properties": {"name": {"type": "string"}}, "required": ["name"],
//       "additionalProperties": false})"));
//   GrammarMatches(grammar, R"({"name":"Ada"})");   // true
//
// Exactness: every text the grammar accepts is valid against the schema (as ajv's 2020 dialect
// with ajv-formats judges it); the grammar may accept only a subset of the valid texts, in the
// documented ways below. A keyword the compiler does not support is refused with
// kInvalidArgument naming the keyword and the JSON pointer where it sits ("#/properties/a"),
// never silently ignored.
//
// Supported keywords
//  - Annotations, ignored: title, description, $comment, $schema, default, examples,
//    deprecated, readOnly, writeOnly; $id at the root only (a nested $id would change the
//    base URI of $ref); $defs and definitions (containers for $ref).
//  - `type`: a name or a list. Without `type`, the types are those the schema's keywords
//    speak of (`properties` -> object, `minLength` -> string, ...), or any value if none does.
//  - `enum`, `const`: the values, written compactly (json::Serialize); filtered by `type` when
//    both are present. No other assertion keyword may sit beside them.
//  - Strings: JSON string syntax exactly (escapes \" \\ \/ \b \f \n \r \t \uXXXX; no raw
//    control character), except that a \u escape of a surrogate must be half of a pair.
//    `minLength`/`maxLength` count code points (an escape is one; a surrogate pair one).
//    `format`: date, time, date-time (RFC 3339: months 01-12, days per month, 29 February in
//    leap years only, hours 00-23, an offset or "Z" required; "T" and "Z" upper case), uuid
//    (lower-case hex, 8-4-4-4-12), email (dot-atom local part @ dotted host names). Any other
//    format is refused. `pattern` (regex_compiler.h): the string's characters match the regex
//    anywhere unless anchored by a leading ^ and a trailing $; it may not be combined with
//    minLength, maxLength or format (refused: the intersection is not built).
//  - Numbers: JSON number syntax (no leading zeros, optional fraction and exponent); integers
//    -?(0|[1-9][0-9]*). So that every number is finite as a double, the integer part has at
//    most 64 digits and the exponent at most 2. `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` are
//    exact: on integers any finite bound (a fractional bound rounds inward), on numbers only
//    integer-valued bounds, exclusive ones below +-2^31, and a bounded number is written
//    without an exponent and with at most 6 fraction digits (so rounding to a double never
//    lands on an exclusive bound). Bounds past +-2^53 (where JSON numbers lose precision) are
//    refused.
//  - Objects: `properties` in declared order; `required` ones must appear, optional ones may
//    be skipped (members always come in the declared order, which keeps the grammar linear in
//    the number of properties); a required name that `properties` does not declare follows
//    them, in `required`'s order. `additionalProperties`: false, true or a schema; absent means
//    allowed, as JSON Schema says (JsonSchemaOptions::additional_properties_by_default turns
//    that off). Additional members follow the declared ones, with any key but the declared
//    names, written in one canonical way (raw characters; \" \\ \b \f \n \r \t and lower-case
//    \u00XX for the other control characters), so a key can never alias a declared one.
//  - Arrays: `items` (a schema or false), `prefixItems`, `minItems`, `maxItems`.
//  - `anyOf`; `oneOf` only when its branches are provably exclusive (their types are
//    disjoint, or their `const`/`enum` values are, or they are objects with a common required
//    property whose `const`/`enum` values are disjoint); otherwise refused, since the grammar
//    cannot enforce "exactly one". `allOf` with a single schema. `$ref` to a JSON pointer in
//    the document ("#", "#/$defs/x", "#/definitions/x"; ~0, ~1 and %XX decoded), recursion
//    included: a rule per referenced schema, named by its pointer. $ref, allOf, anyOf and
//    oneOf take no sibling assertion keyword (annotations only).
//  - Boolean schemas: true is any value; false is allowed where it removes something (a
//    property, items, additionalProperties, an anyOf branch) and refused where nothing would
//    remain.
// Everything else (not, if/then/else, patternProperties, propertyNames, uniqueItems,
// multipleOf, contains, minProperties, dependentRequired, unevaluated*, $anchor, ...) is
// refused. A schema that accepts no value (an empty enum, minItems > maxItems) is refused.
// A $ref cycle that never reaches a schema ({"$ref": "#"} alone) is refused, naming the cycle;
// other left recursion ({"anyOf": [{"$ref": "#"}, ...]}) is refused by the builder, naming the
// rule, which is the pointer of the schema.
//
// Whitespace: outside the JSON text none; inside it, at the places JSON allows it (around
// the punctuation of objects and arrays), at most JsonSchemaOptions::max_whitespace characters
// of space, tab, newline, carriage return; 0 gives compact JSON.
//
// Thread-safe: plain functions.
#ifndef TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILER_H_
#define TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_builder.h"

namespace tandem {

struct JsonSchemaOptions {
  // Whitespace characters allowed at each place JSON allows them (see above); 0: compact.
  // At most kMaxWhitespace.
  int32_t max_whitespace = 0;
  static constexpr int32_t kMaxWhitespace = 64;
  // What an absent `additionalProperties` means: true as JSON Schema says; false makes
  // objects closed unless the schema says otherwise (what OpenAI's strict mode requires).
  bool additional_properties_by_default = true;

  // Bounds on what a client may send (each refusal names the bound and its value).
  size_t max_schema_bytes = 1 << 20;  // the document's size (CompileJsonSchema)
  int32_t max_depth = 64;             // sub-schemas nested inside sub-schemas
  int32_t max_keyword_entries = 1024; // entries of one properties, required, enum, anyOf,
                                      // oneOf or prefixItems
};

// The grammar of the JSON texts that validate against `schema_json` (a JSON Schema document).
// kInvalidArgument naming the culprit: bad JSON, an unsupported keyword or value, a bound past
// `options` or `limits` (a count past limits.max_repeat names the keyword).
absl::StatusOr<Grammar> CompileJsonSchema(absl::string_view schema_json,
                                          const JsonSchemaOptions& options = {},
                                          const GrammarLimits& limits = {});

// Any JSON object (OpenAI's response_format {"type": "json_object"}); keys may repeat.
absl::StatusOr<Grammar> JsonObjectGrammar(const JsonSchemaOptions& options = {});

// For grammars that embed schemas (tool calls): adds the rules of `schema` to `builder` and
// returns the id of the rule of its JSON texts. $ref pointers resolve within `schema`. The
// rules share nothing with other calls' (each call adds its own helper rules). Errors as
// CompileJsonSchema's; counts are checked against the default GrammarLimits (the builder
// applies its own when it builds).
absl::StatusOr<int32_t> AddJsonSchemaRule(const json::Value& schema, GrammarBuilder& builder,
                                          const JsonSchemaOptions& options = {});

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_JSON_SCHEMA_COMPILER_H_
