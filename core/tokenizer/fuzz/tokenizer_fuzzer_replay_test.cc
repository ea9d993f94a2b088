// Runs the tokenizer fuzz entry point as an ordinary test over llama.cpp's vocabulary test
// strings and deterministic hostile variants of them (truncations cut characters, corruptions
// make invalid UTF-8), so builds without libFuzzer check the same properties.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

TEST(TokenizerFuzzerReplayTest, KeepsItsPropertiesOnRealAndHostileText) {
  LLVMFuzzerInitialize(nullptr, nullptr);
  std::vector<fuzzing::Input> seeds;
  const std::string separator = "\n__ggml_vocab_test__\n";
  for (const char* relative :
       {"models/vocab/ggml-vocab-llama-spm.gguf.inp", "models/vocab/ggml-vocab-gpt-2.gguf.inp"}) {
    ASSERT_OK_AND_ASSIGN(std::string path, testing::SharedFile(relative));
    std::ifstream in(path, std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(all.empty()) << path;
    for (size_t start = 0; start < all.size();) {
      size_t end = all.find(separator, start);
      if (end == std::string::npos) end = all.size();
      seeds.emplace_back(all.begin() + start, all.begin() + end);
      start = end + separator.size();
    }
  }
  ASSERT_GT(seeds.size(), 50u);
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/4, /*max_truncated=*/24, /*rng_seed=*/3);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace tandem
