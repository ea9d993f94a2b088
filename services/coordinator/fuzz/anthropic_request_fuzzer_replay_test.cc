// Runs the Messages API request fuzz entry point as an ordinary test over the seed bodies,
// hostile bodies written by hand, and deterministic corruptions of both, so builds without
// libFuzzer check the same properties.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

const char* const kHostile[] = {
    "",
    "null",
    "{}",
    "{\"model\": \"\", \"max_tokens\": 1, \"messages\": []}",
    "{\"model\": \"m\", \"max_tokens\": -1, \"messages\": [{\"role\": \"user\"}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"system\": [{\"type\": \"image\"}], \"messages\": []}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"messages\": [{\"role\": \"user\", \"content\": "
    "[{\"type\": \"tool_result\"}]}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"messages\": [{\"role\": \"assistant\", \"content\": "
    "[{\"type\": \"tool_use\", \"id\": \"\\ud800\", \"name\": \"f\", \"input\": []}]}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"messages\": [{\"role\": \"user\", \"content\": "
    "\"\xff\xfe\"}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"tools\": [{\"name\": \"\", \"input_schema\": 1}], "
    "\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"tool_choice\": {\"type\": null}, \"messages\": "
    "[{\"role\": \"user\", \"content\": \"x\"}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"temperature\": 1e39, \"top_k\": -1, \"messages\": "
    "[{\"role\": \"user\", \"content\": \"x\"}]}",
    "{\"model\": \"m\", \"max_tokens\": 1, \"stop_sequences\": [\"\\u0000\"], \"messages\": "
    "[{\"role\": \"user\", \"content\": \"x\"}]}",
};

std::vector<fuzzing::Input> Seeds() {
  std::vector<fuzzing::Input> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(TANDEM_ANTHROPIC_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const char* body : kHostile) {
    seeds.emplace_back(body, body + std::char_traits<char>::length(body));
  }
  const std::string long_key = "{\"" + std::string(5000, 'k') + "\": 1}";
  seeds.emplace_back(long_key.begin(), long_key.end());
  std::string deep = "{\"model\": \"m\", \"max_tokens\": 1, \"messages\": ";
  deep += std::string(100, '[') + std::string(100, ']') + "}";
  seeds.emplace_back(deep.begin(), deep.end());
  return seeds;
}

TEST(AnthropicRequestFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileAndCorruptedBodies) {
  std::vector<fuzzing::Input> seeds = Seeds();
  ASSERT_GE(seeds.size(), 3u + std::size(kHostile))
      << "seed bodies missing in " << TANDEM_ANTHROPIC_SEEDS;
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/200, /*max_truncated=*/400, /*rng_seed=*/30);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
