// Runs the reasoning-splitter fuzz entry point as an ordinary test over its seeds and
// deterministic hostile variants of them, so builds without libFuzzer check the same
// properties.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "core/toolcall/fuzz/reasoning_seeds.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(ReasoningSplitterFuzzerReplayTest, KeepsItsPropertiesOnSeedsAndHostileVariants) {
  std::vector<fuzzing::Input> seeds;
  for (const char* seed : fuzzing::kReasoningSeeds) {
    seeds.emplace_back(seed, seed + std::char_traits<char>::length(seed));
  }
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/60, /*max_truncated=*/64, /*rng_seed=*/28);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0)
        << std::string(input.begin(), input.end());
  }
}

}  // namespace
}  // namespace tandem
