// Runs the token-mask fuzz entry point as an ordinary test over the GBNF seeds and
// deterministic hostile variants of them, so builds without libFuzzer check its properties.
#include <cstdint>
#include <string>
#include <vector>

#include "core/grammar/fuzz/gbnf_seeds.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(TokenMaskFuzzerReplayTest, MasksEqualBruteForceOnSeedsAndHostileVariants) {
  std::vector<fuzzing::Input> seeds;
  for (const std::string& seed : fuzzing::GbnfSeeds()) seeds.emplace_back(seed.begin(), seed.end());
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/20, /*max_truncated=*/400, /*rng_seed=*/31);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
}

}  // namespace
}  // namespace tandem
