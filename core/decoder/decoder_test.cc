// Behaviour of the forward pass beyond the golden outputs: batch invariance, sync by
// position, KV cache types, and error codes.
#include "core/decoder/decoder.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<Model> LoadShared(const std::string& relative,
                                  ActivationPrecision activations = ActivationPrecision::kInt16) {
  absl::StatusOr<std::string> path = testing::SharedFile("models/" + relative);
  EXPECT_TRUE(path.ok()) << path.status();
  if (!path.ok()) return nullptr;
  ModelLoadOptions options;
  options.activations = activations;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(*path, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// A prompt of `n` in-vocabulary ids that is not degenerate.
std::vector<int32_t> Tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  return ids;
}

struct InvarianceCase {
  std::string model;
  KvType kv;
  int threads;
  ActivationPrecision activations = ActivationPrecision::kInt16;
};

void PrintTo(const InvarianceCase& c, std::ostream* os) {
  *os << c.model << " kv " << KvTypeName(c.kv) << " threads " << c.threads << " "
      << ActivationPrecisionName(c.activations);
}

class BatchInvarianceTest : public ::testing::TestWithParam<InvarianceCase> {};

// Logits of every position from one batched pass equal those from single-token steps, bit
// for bit, and equal again with another thread count, in either activation precision.
TEST_P(BatchInvarianceTest, BatchedLogitsEqualSingleStepsBitForBit) {
  const InvarianceCase& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model, c.activations);
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size;
  const std::vector<int32_t> tokens = Tokens(23, vocab);

  ThreadPool pool(c.threads), single_pool(1);
  Decoder batched(*model, pool), stepped(*model, single_pool);
  ASSERT_OK_AND_ASSIGN(auto cache_a, batched.NewCache(64, c.kv));
  ASSERT_OK_AND_ASSIGN(auto cache_b, stepped.NewCache(64, c.kv));

  // Batched: a prefill of 14 then a "verify" batch of 9 (pending + 8 guesses).
  ASSERT_OK_AND_ASSIGN(
      auto first,
      batched.Forward(*cache_a, absl::MakeConstSpan(tokens).subspan(0, 14), 0, LogitsMode::kAll));
  std::vector<float> all(first.begin(), first.end());
  ASSERT_OK_AND_ASSIGN(
      auto second,
      batched.Forward(*cache_a, absl::MakeConstSpan(tokens).subspan(14), 14, LogitsMode::kAll));
  all.insert(all.end(), second.begin(), second.end());
  ASSERT_EQ(all.size(), tokens.size() * vocab);

  for (size_t i = 0; i < tokens.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(auto one, stepped.Forward(*cache_b, {tokens[i]}, i, LogitsMode::kLast));
    ASSERT_EQ(0, std::memcmp(one.data(), all.data() + i * vocab, vocab * sizeof(float)))
        << "position " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, BatchInvarianceTest,
    ::testing::Values(
        InvarianceCase{"stories260K/stories260K.gguf", KvType::kF32, 1},
        InvarianceCase{"stories260K/stories260K.gguf", KvType::kF32, 2},
        InvarianceCase{"stories260K/stories260K.gguf", KvType::kF16, 2},
        InvarianceCase{"stories260K/stories260K.gguf", KvType::kI8, 2},
        InvarianceCase{"stories260K/hf", KvType::kF16, 2},
        InvarianceCase{"stories260K/derived/stories260K-Q4_0.gguf", KvType::kF16, 2},
        InvarianceCase{"stories260K/derived/stories260K-Q8_0.gguf", KvType::kF32, 1},
        InvarianceCase{"llama-2-tiny-random/llama-2-tiny-random.gguf", KvType::kF16, 2},
        // --- #31 activations-invariance: the quantized models in int8 mode ---
        InvarianceCase{"stories260K/derived/stories260K-Q4_0.gguf", KvType::kF16, 1,
                       ActivationPrecision::kInt8},
        InvarianceCase{"stories260K/derived/stories260K-Q4_0.gguf", KvType::kF16, 2,
                       ActivationPrecision::kInt8},
        InvarianceCase{"stories260K/derived/stories260K-Q8_0.gguf", KvType::kF32, 1,
                       ActivationPrecision::kInt8},
        InvarianceCase{"stories260K/derived/stories260K-Q8_0.gguf", KvType::kI8, 2,
                       ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q8_0.gguf", KvType::kF16, 2, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q4_0.gguf", KvType::kF32, 2, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q4_K_M.gguf", KvType::kF16, 1, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q4_K_M.gguf", KvType::kF16, 2, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q5_0.gguf", KvType::kF16, 2, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-IQ4_NL.gguf", KvType::kF32, 2, ActivationPrecision::kInt8},
        InvarianceCase{"fixtures/llama-Q4_K_M.gguf", KvType::kF16, 2}),
    // --- end ---
    [](const ::testing::TestParamInfo<InvarianceCase>& info) {
      std::string name = info.param.model + "_" + std::string(KvTypeName(info.param.kv)) + "_t" +
                         std::to_string(info.param.threads) + "_" +
                         std::string(ActivationPrecisionName(info.param.activations));
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(DecoderTest, RerunningFromAnEarlierPositionTruncatesTheCache) {
  std::unique_ptr<Model> model = LoadShared("stories260K/stories260K.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(32, KvType::kF32));
  const std::vector<int32_t> a = {1, 403, 407, 261}, b = {1, 403, 300, 301};
  ASSERT_OK_AND_ASSIGN(auto la, decoder.Forward(*cache, a, 0, LogitsMode::kLast));
  std::vector<float> after_a(la.begin(), la.end());
  // Rewrite positions 2..3 with other tokens, then go back to a's: same logits as before.
  ASSERT_OK(
      decoder.Forward(*cache, absl::MakeConstSpan(b).subspan(2), 2, LogitsMode::kLast).status());
  EXPECT_EQ(cache->length(), 4);
  ASSERT_OK_AND_ASSIGN(
      auto again, decoder.Forward(*cache, absl::MakeConstSpan(a).subspan(2), 2, LogitsMode::kLast));
  EXPECT_EQ(0, std::memcmp(again.data(), after_a.data(), after_a.size() * sizeof(float)));
}

TEST(DecoderTest, I8CacheStaysCloseToF32) {
  std::unique_ptr<Model> model = LoadShared("stories260K/stories260K.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  const std::vector<int32_t> tokens = Tokens(40, model->config().vocab_size);
  ASSERT_OK_AND_ASSIGN(auto f32, decoder.NewCache(64, KvType::kF32));
  ASSERT_OK_AND_ASSIGN(auto exact, decoder.Forward(*f32, tokens, 0, LogitsMode::kLast));
  std::vector<float> reference(exact.begin(), exact.end());
  ASSERT_OK_AND_ASSIGN(auto i8, decoder.NewCache(64, KvType::kI8));
  ASSERT_OK_AND_ASSIGN(auto approx, decoder.Forward(*i8, tokens, 0, LogitsMode::kLast));
  double max_diff = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(approx[i] - reference[i])));
  }
  // 8-bit keys and values move logits of magnitude ~10-20 by a few hundredths.
  EXPECT_LT(max_diff, 0.25);
  EXPECT_GT(max_diff, 0.0);                  // it is a different cache, not the same numbers
  EXPECT_LT(i8->bytes(), f32->bytes() / 2);  // head_dim 8: (8 + 4 scale bytes) vs 32
}

TEST(DecoderTest, CacheBytesAreAccounted) {
  std::unique_ptr<Model> model = LoadShared("stories260K/stories260K.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  // 5 layers x 4 KV heads x 100 positions (allocated as 112: whole key blocks of 16)
  // x 8 dims x (K + V).
  ASSERT_OK_AND_ASSIGN(auto f32, decoder.NewCache(100, KvType::kF32));
  EXPECT_EQ(f32->bytes(), 5 * 4 * 112 * 8 * 2 * 4);
  ASSERT_OK_AND_ASSIGN(auto f16, decoder.NewCache(100, KvType::kF16));
  EXPECT_EQ(f16->bytes(), 5 * 4 * 112 * 8 * 2 * 2);
  ASSERT_OK_AND_ASSIGN(auto i8, decoder.NewCache(100, KvType::kI8));
  EXPECT_EQ(i8->bytes(), 5 * 4 * 112 * (8 + 4) * 2);
}

TEST(DecoderTest, RejectsBadCallsWithExactCodes) {
  std::unique_ptr<Model> model = LoadShared("stories260K/stories260K.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(8, KvType::kF16));
  EXPECT_THAT(decoder.Forward(*cache, {}, 0, LogitsMode::kLast),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no tokens")));
  EXPECT_THAT(decoder.Forward(*cache, {1, 512}, 0, LogitsMode::kLast),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id 512")));
  EXPECT_THAT(decoder.Forward(*cache, {1, -3}, 0, LogitsMode::kLast),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id -3")));
  EXPECT_THAT(decoder.Forward(*cache, {1}, 1, LogitsMode::kLast),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("past the 0 cached")));
  EXPECT_THAT(decoder.Forward(*cache, Tokens(9, 512), 0, LogitsMode::kLast),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("context of 8")));
  // A failed call changes nothing: the cache still accepts a full context.
  EXPECT_EQ(cache->length(), 0);
  EXPECT_OK(decoder.Forward(*cache, Tokens(8, 512), 0, LogitsMode::kLast).status());
  EXPECT_THAT(decoder.NewCache(-1, KvType::kF32), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseKvType("q4"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'q4'")));
}

TEST(ModelLoadTest, ReportsShapeTypeAndParameters) {
  std::unique_ptr<Model> model = LoadShared("stories260K/derived/stories260K-Q8_0.gguf");
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.context_length, 2048);
  EXPECT_EQ(model->weight_type(), "mixed");  // Q8_0 with an F16 ffn_down
  EXPECT_NE(model->gguf(), nullptr);
}

TEST(ModelLoadTest, MissingPathIsNotFound) {
  EXPECT_THAT(Model::Load("/nonexistent/model.gguf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/model.gguf")));
}

TEST(ModelLoadTest, NonModelFileIsRejected) {
  ASSERT_OK_AND_ASSIGN(std::string path, testing::SharedFile("models/golden.json"));
  EXPECT_THAT(Model::Load(path), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ModelLoadTest, VocabularyOnlyGgufLacksTheArchitectureTensors) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/vocab/ggml-vocab-llama-spm.gguf"));
  // The file is a valid GGUF with a vocabulary: what is missing is the first tensor looked up.
  EXPECT_THAT(Model::Load(path), StatusIs(absl::StatusCode::kNotFound,
                                          HasSubstr("no tensor 'token_embd.weight'")));
}

}  // namespace
}  // namespace tandem
