// Runs the HTTP request fuzz entry point as an ordinary test over the seed bodies, hostile
// bodies written by hand, and deterministic corruptions of both, so builds without
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
    "{\"model\": \"\", \"prompt\": \"\"}",
    "{\"model\": \"m\", \"prompt\": [[[]]]}",
    "{\"model\": \"m\", \"prompt\": [-2147483649]}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"temperature\": -1e39, \"top_p\": 1e-320}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"seed\": 9223372036854775807, \"n\": "
    "-9223372036854775808}",
    "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}",
    "{\"model\": \"m\", \"messages\": [{\"role\": \"\\ud800\", \"content\": \"x\"}]}",
    "{\"model\": \"m\", \"prompt\": \"\xff\xfe\"}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"stream_options\": {\"include_usage\": true}}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"max_tokens\": 1, \"max_tokens\": 2}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"grammar\": \"g\", \"regex\": \"r\", "
    "\"response_format\": {\"type\": \"json_object\"}}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"response_format\": {\"type\": \"json_schema\", "
    "\"json_schema\": {\"name\": \"\\u0000\", \"schema\": {\"\\ud800\": 1}}}}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"response_format\": {\"type\": \"text\", "
    "\"type\": \"json_object\"}, \"regex\": \"\\u0000\"}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"response_format\": {\"type\": null}}",
    // Issue #30: logit_bias keys that are not token ids, repeated ids, extreme values.
    "{\"model\": \"m\", \"prompt\": \"p\", \"logit_bias\": {\"\": 1, \"-0\": 1, \"1e3\": 1}}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"logit_bias\": {\"7\": 1, \"7\": -100, \"007\": 1}}",
    "{\"model\": \"m\", \"prompt\": \"p\", \"logit_bias\": {\"4294967296\": 1e39}, "
    "\"presence_penalty\": -1e-320, \"frequency_penalty\": 1e308}",
};

std::vector<fuzzing::Input> Seeds() {
  std::vector<fuzzing::Input> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(TANDEM_OPENAI_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const char* body : kHostile) {
    seeds.emplace_back(body, body + std::char_traits<char>::length(body));
  }
  // A key and a value far over every limit: the error message must still be cut to 1024.
  const std::string long_key = "{\"" + std::string(5000, 'k') + "\": 1}";
  seeds.emplace_back(long_key.begin(), long_key.end());
  std::string deep = "{\"model\": \"m\", \"prompt\": ";
  deep += std::string(100, '[') + std::string(100, ']') + "}";
  seeds.emplace_back(deep.begin(), deep.end());
  // A schema nested as deep as the parser allows, and one past it.
  for (int depth : {58, 70}) {
    std::string schema =
        "{\"model\": \"m\", \"prompt\": \"p\", \"response_format\": {\"type\": "
        "\"json_schema\", \"json_schema\": {\"name\": \"n\", \"schema\": ";
    for (int i = 0; i < depth; ++i) schema += "{\"items\": ";
    schema += "{}" + std::string(depth, '}') + "}}}";
    seeds.emplace_back(schema.begin(), schema.end());
  }
  return seeds;
}

TEST(OpenAiRequestFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileAndCorruptedBodies) {
  std::vector<fuzzing::Input> seeds = Seeds();
  ASSERT_GE(seeds.size(), 7u + std::size(kHostile))
      << "seed bodies missing in " << TANDEM_OPENAI_SEEDS;
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/200, /*max_truncated=*/400, /*rng_seed=*/15);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
