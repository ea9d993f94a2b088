// Runs the JSON Schema fuzz entry point as an ordinary test over its seeds, random schemas and
// deterministic hostile variants of them, so builds without libFuzzer check the same
// properties.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/grammar/fuzz/json_schema_seeds.h"
#include "core/grammar/random_schema_test_util.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(JsonSchemaFuzzerReplayTest, KeepsItsPropertiesOnSeedsRandomSchemasAndHostileVariants) {
  std::vector<fuzzing::Input> seeds;
  for (const char* seed : fuzzing::kJsonSchemaSeeds) {
    seeds.emplace_back(seed, seed + std::char_traits<char>::length(seed));
  }
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string schema = json::Serialize(testing::RandomSchema(seed));
    seeds.emplace_back(schema.begin(), schema.end());
  }
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/25, /*max_truncated=*/48, /*rng_seed=*/31);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0)
        << std::string(input.begin(), input.end());
  }
}

}  // namespace
}  // namespace tandem
