// Runs the tool-call spec fuzz entry point as an ordinary test over its seeds and deterministic
// hostile variants of them, so builds without libFuzzer check the same properties.
#include <cstdint>
#include <string>
#include <vector>

#include "core/grammar/fuzz/tool_call_spec_seeds.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(ToolCallSpecFuzzerReplayTest, KeepsItsPropertiesOnSeedsAndHostileVariants) {
  std::vector<fuzzing::Input> seeds;
  for (const char* seed : fuzzing::kToolCallSpecSeeds) {
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

}  // namespace
}  // namespace tandem
