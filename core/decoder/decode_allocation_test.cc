// The decode step allocates nothing, in either activation precision: this binary counts every
// operator new. The gemma2 fixture decodes far past its window, so its rings recycle blocks
// meanwhile.
#include <memory>
#include <utility>
#include <vector>

#include "core/base/allocation_counter.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(DecodeAllocationTest, DecodeStepsAllocateNothingAfterTheFirst) {
  for (const char* relative :
       {"models/stories260K/stories260K.gguf", "models/stories260K/derived/stories260K-Q4_0.gguf",
        "models/stories260K/derived/stories260K-Q8_0.gguf", "models/fixtures/gemma2-F16.gguf",
        "models/fixtures/llama-Q4_K_M.gguf"}) {
    for (auto [threads, activations] :
         {std::pair{1, ActivationPrecision::kInt16}, std::pair{2, ActivationPrecision::kInt16},
          std::pair{1, ActivationPrecision::kInt8}, std::pair{2, ActivationPrecision::kInt8}}) {
      ASSERT_OK_AND_ASSIGN(std::string path, testing::SharedFile(relative));
      ModelLoadOptions options;
      options.activations = activations;
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(path, options));
      ThreadPool pool(threads);
      Decoder decoder(*model, pool);
      ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(256, KvType::kF16));
      const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
      ASSERT_OK(decoder.Forward(*cache, prompt, 0, LogitsMode::kLast).status());
      int32_t token = 300;
      ASSERT_OK(decoder.Forward(*cache, {token}, 5, LogitsMode::kLast).status());

      const int64_t before = testing::AllocationCount();
      ASSERT_GT(before, 0);  // the counter sees allocations (loading made many)
      for (int64_t position = 6; position < 200; ++position) {
        absl::StatusOr<absl::Span<const float>> logits =
            decoder.Forward(*cache, {token}, position, LogitsMode::kLast);
        if (!logits.ok()) FAIL() << logits.status();
        token = static_cast<int32_t>(position * 31 % 512);
      }
      EXPECT_EQ(testing::AllocationCount() - before, 0)
          << relative << " threads " << threads << " " << ActivationPrecisionName(activations);
    }
  }
}

}  // namespace
}  // namespace tandem
