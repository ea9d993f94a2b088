// json_schema_samples: prints, for random schemas (random_schema_test_util.h), random sentences
// of their grammars as JSON lines {"schema": S, "text": T}, for tools/validate_json_schema.mjs
// to judge (tests/ops/json_schema_validity_test.py): every sentence must validate.
//
//   json_schema_samples SEEDS SENTENCES_PER_SCHEMA
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/base/json.h"
#include "core/grammar/json_schema_compiler.h"
#include "core/grammar/random_schema_test_util.h"

int main(int argc, char** argv) {
  using namespace tandem;
  if (argc != 3) {
    std::fprintf(stderr, "usage: json_schema_samples SEEDS SENTENCES_PER_SCHEMA\n");
    return 2;
  }
  const int seeds = std::atoi(argv[1]), per_schema = std::atoi(argv[2]);
  int failures = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    const json::Value schema = testing::RandomSchema(static_cast<uint32_t>(seed));
    absl::StatusOr<Grammar> grammar = CompileJsonSchema(json::Serialize(schema));
    if (!grammar.ok()) {
      std::fprintf(stderr, "seed %d: %s\n", seed, grammar.status().ToString().c_str());
      ++failures;
      continue;
    }
    for (int i = 0; i < per_schema; ++i) {
      std::optional<std::string> text =
          testing::RandomSentence(*grammar, static_cast<uint32_t>(seed * 1000 + i));
      if (!text) continue;  // no end within the budget (a deep recursion): nothing to judge
      json::Object line{{"schema", schema}, {"text", *text}};
      std::printf("%s\n", testing::CompactJson(json::Value(std::move(line))).c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}
