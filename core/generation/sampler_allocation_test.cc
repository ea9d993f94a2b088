// Sample allocates nothing: this binary counts every operator new.
#include <cmath>
#include <vector>

#include "core/base/allocation_counter.h"
#include "core/base/status_matchers.h"
#include "core/generation/sampler.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

SamplerConfig Config(float temperature, int32_t top_k, float top_p, float min_p, float penalty) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = top_k;
  c.top_p = top_p;
  c.min_p = min_p;
  c.repetition_penalty = penalty;
  c.penalty_window = 64;
  return c;
}

TEST(SamplerAllocationTest, SampleAllocatesNothing) {
  constexpr int64_t kVocab = 32000;
  std::vector<float> logits(kVocab);
  for (int64_t i = 0; i < kVocab; ++i) logits[i] = std::sin(0.01f * i) * 8.0f;
  std::vector<int32_t> context(200);
  for (size_t i = 0; i < context.size(); ++i) context[i] = static_cast<int32_t>(i * 97 % kVocab);

  for (const SamplerConfig& config :
       {Config(0, 0, 1, 0, 1), Config(1, 0, 1, 0, 1), Config(0.7f, 40, 0.95f, 0.05f, 1.1f),
        Config(1, 0, 0.9f, 0, 1.3f), Config(1.5f, 0, 1, 0.1f, 1)}) {
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, kVocab));
    const int64_t before = testing::AllocationCount();
    ASSERT_GT(before, 0);  // the counter sees allocations (Create made some)
    int64_t checksum = 0;
    for (int64_t position = 0; position < 20; ++position) {
      checksum += sampler.Sample(logits, context, position);
    }
    EXPECT_EQ(testing::AllocationCount() - before, 0) << "temperature " << config.temperature;
    EXPECT_GE(checksum, 0);
  }
}

TEST(SamplerAllocationTest, LogitBiasAndOpenAiPenaltiesAllocateNothing) {
  constexpr int64_t kVocab = 32000;
  std::vector<float> logits(kVocab);
  for (int64_t i = 0; i < kVocab; ++i) logits[i] = std::sin(0.01f * i) * 8.0f;
  std::vector<int32_t> context(2000);
  for (size_t i = 0; i < context.size(); ++i) context[i] = static_cast<int32_t>(i * 31 % 700);
  for (float temperature : {0.0f, 0.8f}) {
    SamplerConfig config = Config(temperature, 40, 0.95f, 0.05f, 1.1f);
    for (int32_t id = 0; id < 1024; ++id)
      config.logit_bias.push_back({id * 31, id % 2 ? -100.0f : 3.0f});
    config.presence_penalty = 0.6f;
    config.frequency_penalty = 0.3f;
    config.output_start = 500;
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, kVocab));
    const int64_t before = testing::AllocationCount();
    int64_t checksum = 0;
    for (int64_t position = 0; position < 20; ++position) {
      checksum += sampler.Sample(logits, context, position);
    }
    EXPECT_EQ(testing::AllocationCount() - before, 0) << "temperature " << temperature;
    EXPECT_GE(checksum, 0);
  }
}

TEST(SamplerAllocationTest, MaskedSampleAllocatesNothing) {
  constexpr int64_t kVocab = 32000;
  std::vector<float> logits(kVocab);
  for (int64_t i = 0; i < kVocab; ++i) logits[i] = std::sin(0.01f * i) * 8.0f;
  TokenMask mask;
  mask.Resize(kVocab);
  for (int32_t id = 0; id < kVocab; id += 3) mask.Allow(id);
  for (const SamplerConfig& config :
       {Config(0, 0, 1, 0, 1), Config(0.7f, 40, 0.95f, 0.05f, 1.1f)}) {
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, kVocab));
    const int64_t before = testing::AllocationCount();
    int64_t checksum = 0;
    for (int64_t position = 0; position < 20; ++position) {
      checksum += sampler.Sample(logits, {}, position, RandomPurpose::kSample, &mask);
    }
    EXPECT_EQ(testing::AllocationCount() - before, 0) << "temperature " << config.temperature;
    EXPECT_EQ(checksum % 3, 0);  // every token drawn is allowed
  }
}

}  // namespace
}  // namespace tandem
