// Runs the /v1/embeddings fuzz entry point as an ordinary test over the seed bodies, hostile
// bodies written by hand, and deterministic corruptions of both, so builds without libFuzzer
// check the same properties.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

#ifndef TANDEM_EMBEDDINGS_SEEDS  // CMake gives the source folder; Bazel runs from the runfiles root
#define TANDEM_EMBEDDINGS_SEEDS "services/coordinator/fuzz/embeddings_seeds"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

const char* const kHostile[] = {
    "",
    "null",
    "{}",
    "{\"model\": \"\", \"input\": \"\"}",
    "{\"model\": \"m\", \"input\": [[[]]]}",
    "{\"model\": \"m\", \"input\": [-2147483649]}",
    "{\"model\": \"m\", \"input\": [2147483648]}",
    "{\"model\": \"m\", \"input\": [[1], [], [2]]}",
    "{\"model\": \"m\", \"input\": [\"a\", [1]]}",
    "{\"model\": \"m\", \"input\": [1, \"a\"]}",
    "{\"model\": \"m\", \"input\": \"\\ud800\"}",
    "{\"model\": \"m\", \"input\": \"\xff\xfe\"}",
    "{\"model\": \"m\", \"input\": \"a\", \"input\": [1]}",
    "{\"model\": \"m\", \"input\": \"a\", \"dimensions\": -1, \"encoding_format\": \"base64\"}",
    "{\"model\": \"m\", \"input\": \"a\", \"dimensions\": 4, \"encoding_format\": null}",
    "{\"model\": \"m\", \"input\": [\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]}",
};

std::vector<fuzzing::Input> Seeds() {
  std::vector<fuzzing::Input> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(TANDEM_EMBEDDINGS_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const char* body : kHostile) {
    seeds.emplace_back(body, body + std::char_traits<char>::length(body));
  }
  const std::string long_key = "{\"" + std::string(5000, 'k') + "\": 1}";
  seeds.emplace_back(long_key.begin(), long_key.end());
  std::string deep = "{\"model\": \"m\", \"input\": ";
  deep += std::string(100, '[') + std::string(100, ']') + "}";
  seeds.emplace_back(deep.begin(), deep.end());
  std::string many = "{\"model\": \"m\", \"input\": [";
  for (int i = 0; i < 3000; ++i) many += i > 0 ? ",1" : "1";
  many += "]}";
  seeds.emplace_back(many.begin(), many.end());
  return seeds;
}

TEST(EmbeddingsRequestFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileAndCorruptedBodies) {
  std::vector<fuzzing::Input> seeds = Seeds();
  ASSERT_GE(seeds.size(), 4u + std::size(kHostile))
      << "seed bodies missing in " << TANDEM_EMBEDDINGS_SEEDS;
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/200, /*max_truncated=*/400, /*rng_seed=*/30);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
