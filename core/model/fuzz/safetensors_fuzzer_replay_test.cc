// Runs the safetensors fuzz entry point over generated hostile inputs as an ordinary unit
// test, so builds without libFuzzer (and the ASan build) still exercise it.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/fuzz/seed_corpus.h"
#include "core/model/mapped_file.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

// An exact-size heap copy, so ASan flags a read one byte past the end.
int RunOne(const fuzzing::Input& input) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size()]);
  std::copy(input.begin(), input.end(), copy.get());
  return LLVMFuzzerTestOneInput(copy.get(), input.size());
}

TEST(SafetensorsFuzzerReplayTest, SurvivesGeneratedHostileInputs) {
  std::vector<fuzzing::Input> seeds = fuzzing::SafetensorsSeeds();
  ASSERT_OK_AND_ASSIGN(std::string path,
                       tandem::testing::SharedFile("models/stories260K/hf/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  seeds.emplace_back(file.data(), file.data() + file.size());
  for (const fuzzing::Input& seed : seeds) ASSERT_EQ(RunOne(seed), 0);
  const std::vector<fuzzing::Input> variants =
      fuzzing::HostileVariants(seeds, /*per_seed=*/400, /*max_truncated=*/512, /*rng_seed=*/1);
  for (const fuzzing::Input& input : variants) ASSERT_EQ(RunOne(input), 0);
}

}  // namespace
}  // namespace tandem
