// Runs the .npy fuzz entry point as an ordinary test over the seeds, the headers of the
// shared reference logits, and deterministic hostile variants of both (every truncation of
// the first 160 bytes, random corruptions), so builds without libFuzzer check the same
// properties.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "client/logits/fuzz/npy_seeds.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(NpyFuzzerReplayTest, KeepsItsPropertiesOnSeedsFixtureFilesAndHostileVariants) {
  std::vector<fuzzing::Input> seeds = fuzzing::NpySeeds();
  for (const char* file : {"llama-F16.logits.npy", "qwen2-F16.logits.npy"}) {
    std::ifstream in(testing::SharedDir() + "/models/fixtures/" + file, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 128u) << file << " missing (set TANDEM_SHARED)";
    seeds.push_back(bytes);
    bytes.resize(1024);  // a real header over too little data
    seeds.push_back(bytes);
  }
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/40, /*max_truncated=*/160, /*rng_seed=*/11);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  ASSERT_GT(inputs.size(), 2000u);
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
