// Runs the Responses API request fuzz entry point as an ordinary test over the seed bodies,
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
    "{\"model\": \"\", \"input\": []}",
    "{\"model\": \"m\", \"input\": [{}]}",
    "{\"model\": \"m\", \"input\": [{\"type\": \"function_call\", \"call_id\": 1}]}",
    "{\"model\": \"m\", \"input\": [{\"role\": \"user\", \"content\": [{\"type\": "
    "\"input_text\"}]}]}",
    "{\"model\": \"m\", \"input\": \"\xff\xfe\"}",
    "{\"model\": \"m\", \"input\": \"x\", \"instructions\": \"\\ud800\"}",
    "{\"model\": \"m\", \"input\": \"x\", \"text\": {\"format\": {\"type\": \"json_schema\", "
    "\"name\": \"\\u0000\", \"schema\": {\"\\ud800\": 1}}}}",
    "{\"model\": \"m\", \"input\": \"x\", \"text\": {\"format\": {\"type\": \"json_object\"}, "
    "\"format\": {\"type\": \"json_object\"}}}",
    "{\"model\": \"m\", \"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": \"f\", "
    "\"parameters\": []}], \"tool_choice\": {\"type\": \"function\"}}",
    "{\"model\": \"m\", \"input\": \"x\", \"max_output_tokens\": 2147483648, \"temperature\": "
    "1e39}",
    "{\"model\": \"m\", \"input\": \"x\", \"metadata\": {\"a\": [1, {\"b\": null}]}, \"tools\": "
    "[]}",
};

std::vector<fuzzing::Input> Seeds() {
  std::vector<fuzzing::Input> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(TANDEM_RESPONSES_SEEDS)) {
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

TEST(ResponsesRequestFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileAndCorruptedBodies) {
  std::vector<fuzzing::Input> seeds = Seeds();
  ASSERT_GE(seeds.size(), 3u + std::size(kHostile))
      << "seed bodies missing in " << TANDEM_RESPONSES_SEEDS;
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/200, /*max_truncated=*/400, /*rng_seed=*/31);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
