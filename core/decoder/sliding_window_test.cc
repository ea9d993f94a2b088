// Sliding-window attention: on a one-layer gemma2 model (layer 0 slides, window 4) a query
// sees only the last 4 positions, so changing a token changes the logits of exactly the
// positions whose window holds it, and the others stay bit-identical.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<float> AllLogits(const Model& model, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  Decoder decoder(model, pool);
  auto cache = decoder.NewCache(64, KvType::kF32);
  EXPECT_TRUE(cache.ok()) << cache.status();
  if (!cache.ok()) return {};
  auto logits = decoder.Forward(**cache, tokens, 0, LogitsMode::kAll);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>();
}

TEST(SlidingWindowTest, AQuerySeesOnlyTheLastWindowPositions) {
  ASSERT_OK_AND_ASSIGN(std::string vocab,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(
      std::string dir,
      testing::MakeFixtureModel({"--arch", "gemma2", "--layers", "1", "--dim", "64", "--ffn", "96",
                                 "--sliding-window", "4", "--vocab-from", vocab}));
  for (const std::string& path : {dir + "/model.gguf", dir + "/hf"}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(path));
    ASSERT_TRUE(model->config().IsSlidingLayer(0));
    ASSERT_EQ(model->config().sliding_window, 4);
    std::vector<int32_t> a = {1, 5, 9, 14, 20, 27, 35, 44, 54, 65, 77, 90};
    std::vector<int32_t> b = a;
    b[3] = 200;  // seen by the queries at positions 3..6 only
    const std::vector<float> la = AllLogits(*model, a), lb = AllLogits(*model, b);
    const int64_t vocab_size = model->config().vocab_size;
    ASSERT_EQ(la.size(), a.size() * vocab_size);
    ASSERT_EQ(lb.size(), la.size());
    for (int64_t p = 0; p < static_cast<int64_t>(a.size()); ++p) {
      const bool same = std::memcmp(la.data() + p * vocab_size, lb.data() + p * vocab_size,
                                    vocab_size * sizeof(float)) == 0;
      EXPECT_EQ(same, p < 3 || p > 6) << path << " position " << p;
    }
  }
}

}  // namespace
}  // namespace tandem
