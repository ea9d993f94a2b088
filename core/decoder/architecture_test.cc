// ApplyArchitecture's table (what each GGUF architecture implies for the forward pass) and
// ModelConfig::IsSlidingLayer's layer rule (llama.cpp's: layer l slides iff
// l % pattern < pattern - 1).
#include "core/decoder/architecture.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ApplyArchitectureTest, SetsEachArchitecturesTraits) {
  struct Case {
    std::string arch;
    RopeLayout layout;
    bool qkv_bias, qk_norm, fused, gemma;
    int64_t sliding_pattern;
  };
  const std::vector<Case> cases = {
      {"llama", RopeLayout::kInterleaved, false, false, false, false, 0},
      {"qwen2", RopeLayout::kHalf, true, false, false, false, 0},
      {"qwen3", RopeLayout::kHalf, false, true, false, false, 0},
      {"phi3", RopeLayout::kHalf, false, false, true, false, 0},
      {"gemma2", RopeLayout::kHalf, false, false, false, true, 2},
      {"gemma3", RopeLayout::kHalf, false, true, false, true, 6},
  };
  for (const Case& c : cases) {
    ModelConfig config;
    config.architecture = c.arch;
    ASSERT_OK(ApplyArchitecture("f.gguf", &config));
    EXPECT_EQ(config.rope_layout, c.layout) << c.arch;
    EXPECT_EQ(config.qkv_bias, c.qkv_bias) << c.arch;
    EXPECT_EQ(config.qk_norm, c.qk_norm) << c.arch;
    EXPECT_EQ(config.fused_projections, c.fused) << c.arch;
    EXPECT_EQ(config.gemma, c.gemma) << c.arch;
    EXPECT_EQ(config.sliding_pattern, c.sliding_pattern) << c.arch;
  }
}

TEST(ApplyArchitectureTest, AnUnknownArchitectureIsUnimplementedNamingFileAndName) {
  ModelConfig config;
  config.architecture = "mamba";
  EXPECT_THAT(ApplyArchitecture("/m/x.gguf", &config),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("/m/x.gguf"), HasSubstr("'mamba'"), HasSubstr("gemma3"))));
}

TEST(SlidingLayerTest, FollowsThePatternAndNeedsAWindow) {
  ModelConfig c;
  c.sliding_window = 16;
  c.sliding_pattern = 2;  // gemma2: 0, 2, 4 slide
  EXPECT_EQ((std::vector<bool>{c.IsSlidingLayer(0), c.IsSlidingLayer(1), c.IsSlidingLayer(2),
                               c.IsSlidingLayer(3)}),
            (std::vector<bool>{true, false, true, false}));
  c.sliding_pattern = 3;  // the gemma3 fixture: 0, 1 slide, 2 is global
  EXPECT_EQ((std::vector<bool>{c.IsSlidingLayer(0), c.IsSlidingLayer(1), c.IsSlidingLayer(2),
                               c.IsSlidingLayer(3)}),
            (std::vector<bool>{true, true, false, true}));
  c.sliding_pattern = 1;  // every layer global
  EXPECT_FALSE(c.IsSlidingLayer(0));
  c.sliding_pattern = 2;
  c.sliding_window = 0;  // no window: nothing slides
  EXPECT_FALSE(c.IsSlidingLayer(0));
}

}  // namespace
}  // namespace tandem
