// Runs the /tokenize and /detokenize fuzz entry point as an ordinary test over bodies written
// by hand and deterministic corruptions of them, so builds without libFuzzer check the same
// properties.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

const char* const kBodies[] = {
    "",
    "null",
    "{}",
    "{\"content\": \"Once upon a time\"}",
    "{\"content\": \"<s>hi\", \"add_special\": true, \"parse_special\": false, "
    "\"with_pieces\": true}",
    "{\"content\": \"\\ud800\"}",
    "{\"content\": \"x\", \"content\": 5}",
    "{\"tokens\": [0, 1, 2, 3, 4, 5]}",
    "{\"tokens\": [2, 2, 4]}",
    "{\"tokens\": [-1]}",
    "{\"tokens\": [6]}",
    "{\"tokens\": [1e400]}",
    "{\"tokens\": [9223372036854775807, -9223372036854775808]}",
    "{\"tokens\": [[0]]}",
    "{\"tokens\": {\"0\": 1}}",
};

TEST(TokenRoutesFuzzerReplayTest, KeepsItsPropertiesOnHandWrittenAndCorruptedBodies) {
  std::vector<fuzzing::Input> seeds;
  for (const char* body : kBodies) {
    seeds.emplace_back(body, body + std::char_traits<char>::length(body));
  }
  std::string many = "{\"tokens\": [0";
  for (int i = 0; i < 100; ++i) many += ", 1";
  many += "]}";
  seeds.emplace_back(many.begin(), many.end());
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/100, /*max_truncated=*/200, /*rng_seed=*/30);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
