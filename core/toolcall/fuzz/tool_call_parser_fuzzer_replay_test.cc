// Runs the tool-call parser fuzz entry point as an ordinary test over its seeds, hostile
// variants of them, and generated outputs of every family from fixed random bytes, so builds
// without libFuzzer check the same properties.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "core/toolcall/fuzz/tool_call_seeds.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(ToolCallParserFuzzerReplayTest, KeepsItsPropertiesOnSeedsAndHostileVariants) {
  std::vector<fuzzing::Input> seeds;
  for (const char* seed : fuzzing::kToolCallSeeds) {
    seeds.emplace_back(seed, seed + std::char_traits<char>::length(seed));
  }
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/40, /*max_truncated=*/64, /*rng_seed=*/28);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0)
        << std::string(input.begin(), input.end());
  }
}

TEST(ToolCallParserFuzzerReplayTest, GeneratedOutputOfEveryFamilyParsesExactly) {
  std::mt19937 gen(28);
  for (uint8_t family = 0; family < 8; ++family) {
    for (int round = 0; round < 200; ++round) {
      fuzzing::Input input = {family, 'g'};
      for (int i = 0; i < 96; ++i) input.push_back(static_cast<uint8_t>(gen()));
      ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
    }
  }
}

}  // namespace
}  // namespace tandem
