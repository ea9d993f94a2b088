// Test-only: seeded random JSON Schemas over every keyword the JSON Schema compiler supports
// (json_schema_compiler.h), and random instances valid against them. For the compiler's own
// tests (each instance must be in the schema's grammar) and the end-to-end validity test
// (every constrained output must validate: tools/validate_json_schema.mjs runs ajv).
//
//   json::Value schema = testing::RandomSchema(seed);
//   std::string text = testing::CompactJson(testing::RandomInstance(schema, seed));
//
// Deterministic for a seed on every platform (std::mt19937 drawn through a fixed mapping, no
// std::*_distribution). Schemas stay small (a few dozen keywords) and never refused by the
// compiler: oneOf branches are exclusive, bounds consistent, recursion escapable.
#ifndef TANDEM_CORE_GRAMMAR_RANDOM_SCHEMA_TEST_UTIL_H_
#define TANDEM_CORE_GRAMMAR_RANDOM_SCHEMA_TEST_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/json.h"
#include "core/grammar/grammar.h"

namespace tandem::testing {

struct RandomSchemaOptions {
  int max_depth = 3;       // sub-schemas nested in sub-schemas (refs aside)
  bool patterns = true;    // include `pattern` (the regex front end)
  // Only schemas whose grammar is finite but for the recursive "tree" of $defs (whose children
  // are then at most one): every string has a maxLength, a bounded pattern or a bounded format
  // (date, uuid), every number and integer both bounds, every array maxItems and an `items`,
  // every object additionalProperties false, and no `true`/{} schema. So that any model's
  // constrained output ends (end-of-output tokens are allowed only where the grammar may end):
  // the end-to-end validity test runs random-weight models with these.
  bool bounded = false;
};

json::Value RandomSchema(uint32_t seed, const RandomSchemaOptions& options = {});

// A value valid against `schema`, which RandomSchema made: members in declared order, keys
// as the compiler writes them, so CompactJson of it is in the schema's grammar.
json::Value RandomInstance(const json::Value& schema, uint32_t seed);

// A random sentence of `grammar` (a random walk over the matcher's next bytes that heads for
// an end past `soft_max` bytes), or nullopt if none ended within `hard_max` bytes. Checks a
// grammar's soundness: every sentence of a schema's grammar must validate against it.
std::optional<std::string> RandomSentence(const Grammar& grammar, uint32_t seed,
                                          size_t soft_max = 64, size_t hard_max = 4096);

// `value` as compact JSON text (no spaces), as the compiler's grammars write it.
std::string CompactJson(const json::Value& value);

}  // namespace tandem::testing

#endif  // TANDEM_CORE_GRAMMAR_RANDOM_SCHEMA_TEST_UTIL_H_
