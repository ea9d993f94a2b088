// Embeddings (embedding.h): the hidden states are exactly the rows the logits are projected
// from, the same bits whatever the chunking, batch or thread count; pooling and the L2 norm
// match hand-computed values; bad input is refused with kInvalidArgument.
#include "core/decoder/embedding.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "core/kernels/matmul.h"
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

std::vector<int32_t> Tokens(int seed, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + seed * 104729) % vocab));
  return ids;
}

const char* const kModels[] = {"stories260K/stories260K.gguf",
                               "stories260K/derived/stories260K-Q8_0.gguf"};

// Models in an activation precision: the float one, and quantized ones in int8 mode too.
struct ModelMode {
  const char* model;
  ActivationPrecision activations;
};
const ModelMode kModelModes[] = {
    {"stories260K/stories260K.gguf", ActivationPrecision::kInt16},
    {"stories260K/derived/stories260K-Q8_0.gguf", ActivationPrecision::kInt16},
    {"stories260K/derived/stories260K-Q8_0.gguf", ActivationPrecision::kInt8},
    {"fixtures/llama-Q4_K_M.gguf", ActivationPrecision::kInt8},
};

struct PoolCase {
  const char* name;
  std::vector<float> hidden;
  int64_t dim;
  Pooling pooling;
  std::vector<double> want;
};

TEST(PoolHiddenTest, MeanAndLastMatchHandComputedUnitVectors) {
  const double r2 = std::sqrt(2.0), r17 = std::sqrt(17.0);
  const PoolCase cases[] = {
      {"mean of two rows", {3, 0, 1, 4}, 2, Pooling::kMean, {1 / r2, 1 / r2}},
      {"last of two rows", {3, 0, 1, 4}, 2, Pooling::kLast, {1 / r17, 4 / r17}},
      {"one row either way", {0, -2, 0}, 3, Pooling::kMean, {0, -1, 0}},
      {"zero vector stays zero", {1, -1, -1, 1}, 2, Pooling::kMean, {0, 0}},
      {"last zero row", {5, 5, 0, 0}, 2, Pooling::kLast, {0, 0}},
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<float>> got = PoolHidden(c.hidden, c.dim, c.pooling);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), c.want.size());
    for (size_t j = 0; j < c.want.size(); ++j) EXPECT_EQ((*got)[j], static_cast<float>(c.want[j]));
  }
}

TEST(PoolHiddenTest, RefusesRowsThatDoNotFit) {
  EXPECT_THAT(PoolHidden({}, 4, Pooling::kMean), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(PoolHidden({1, 2, 3}, 2, Pooling::kLast),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rows of 2")));
  EXPECT_THAT(PoolHidden({1, 2}, 0, Pooling::kLast), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PoolingTest, ParsesItsNamesAndRefusesOthers) {
  EXPECT_THAT(ParsePooling("mean"), ::tandem::testing::IsOkAndHolds(Pooling::kMean));
  EXPECT_THAT(ParsePooling("last"), ::tandem::testing::IsOkAndHolds(Pooling::kLast));
  EXPECT_EQ(PoolingName(Pooling::kMean), "mean");
  EXPECT_EQ(PoolingName(Pooling::kLast), "last");
  EXPECT_THAT(ParsePooling("cls"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cls")));
}

// The scalar check: projecting each hidden row with the output matrix gives exactly the
// logits a normal prefill computes for that position, so the rows are the final-norm states.
TEST(HiddenStatesTest, ProjectToExactlyThePrefillsLogits) {
  for (const ModelMode& m : kModelModes) {
    SCOPED_TRACE(::testing::Message() << m.model << " " << ActivationPrecisionName(m.activations));
    std::unique_ptr<Model> model = LoadShared(m.model, m.activations);
    ASSERT_NE(model, nullptr);
    const ModelConfig& c = model->config();
    ThreadPool pool(2);
    Decoder decoder(*model, pool);
    const std::vector<int32_t> tokens = Tokens(1, 40, c.vocab_size);
    absl::StatusOr<std::vector<float>> hidden = HiddenStates(decoder, tokens, KvType::kF32);
    ASSERT_TRUE(hidden.ok()) << hidden.status();
    ASSERT_EQ(hidden->size(), tokens.size() * c.dim);
    std::vector<float> projected(tokens.size() * c.vocab_size);
    MatMulScratch scratch;
    MatMul(model->output(), hidden->data(), static_cast<int64_t>(tokens.size()), projected.data(),
           pool, &scratch);
    auto cache = decoder.NewCache(64, KvType::kF32);
    ASSERT_TRUE(cache.ok());
    absl::StatusOr<absl::Span<const float>> logits =
        decoder.Forward(**cache, tokens, 0, LogitsMode::kAll);
    ASSERT_TRUE(logits.ok()) << logits.status();
    ASSERT_EQ(logits->size(), projected.size());
    for (size_t i = 0; i < projected.size(); ++i) ASSERT_EQ((*logits)[i], projected[i]) << i;
  }
}

// An input's embedding is the same bits embedded alone (chunked), one token per pass, or in a
// ragged batch beside other inputs, at 1 or 2 threads.
void ExpectEmbeddingsBitIdenticalAloneSteppedAndInABatch(const Model& model) {
  const ModelConfig& c = model.config();
  const std::vector<int32_t> a = Tokens(2, 37, c.vocab_size), b = Tokens(3, 11, c.vocab_size);
  ThreadPool one(1), two(2);
  Decoder alone_decoder(model, one), batch_decoder(model, two);
  for (Pooling pooling : {Pooling::kMean, Pooling::kLast}) {
    SCOPED_TRACE(PoolingName(pooling));
    absl::StatusOr<std::vector<float>> alone = Embed(alone_decoder, a, pooling, KvType::kF16);
    ASSERT_TRUE(alone.ok()) << alone.status();
    // Stepped: one row per pass.
    auto stepped_cache = ScratchCache(alone_decoder, 37, KvType::kF16);
    ASSERT_TRUE(stepped_cache.ok());
    std::vector<float> stepped(a.size() * c.dim);
    for (size_t i = 0; i < a.size(); ++i) {
      ForwardSegment row{stepped_cache->get(), absl::MakeConstSpan(&a[i], 1),
                         static_cast<int64_t>(i), LogitsMode::kLast, stepped.data() + i * c.dim};
      ASSERT_TRUE(alone_decoder.ForwardBatch(absl::MakeConstSpan(&row, 1)).ok());
    }
    EXPECT_EQ(*PoolHidden(stepped, c.dim, pooling), *alone);
    // Batched beside b.
    auto cache_a = ScratchCache(batch_decoder, 37, KvType::kF16);
    auto cache_b = ScratchCache(batch_decoder, 11, KvType::kF16);
    ASSERT_TRUE(cache_a.ok() && cache_b.ok());
    std::vector<float> hidden_a(a.size() * c.dim), hidden_b(b.size() * c.dim);
    const ForwardSegment batch[] = {
        {cache_b->get(), b, 0, LogitsMode::kNone, hidden_b.data()},
        {cache_a->get(), a, 0, LogitsMode::kNone, hidden_a.data()},
    };
    ASSERT_TRUE(batch_decoder.ForwardBatch(batch).ok());
    EXPECT_EQ(*PoolHidden(hidden_a, c.dim, pooling), *alone);
    EXPECT_EQ(*PoolHidden(hidden_b, c.dim, pooling), *Embed(alone_decoder, b, pooling, KvType::kF16));
  }
}

// The same for the float model and quantized models in either activation precision.
TEST(EmbedTest, IsBitIdenticalAloneSteppedAndInABatch) {
  for (const ModelMode& m : kModelModes) {
    SCOPED_TRACE(::testing::Message() << m.model << " " << ActivationPrecisionName(m.activations));
    std::unique_ptr<Model> model = LoadShared(m.model, m.activations);
    ASSERT_NE(model, nullptr);
    ExpectEmbeddingsBitIdenticalAloneSteppedAndInABatch(*model);
  }
}

TEST(EmbedTest, IsAUnitVectorOfTheModelsWidth) {
  std::unique_ptr<Model> model = LoadShared(kModels[0]);
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  absl::StatusOr<std::vector<float>> e =
      Embed(decoder, Tokens(4, 9, model->config().vocab_size), Pooling::kMean, KvType::kF16);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(static_cast<int64_t>(e->size()), model->config().dim);
  double norm = 0;
  for (float v : *e) norm += static_cast<double>(v) * v;
  EXPECT_NEAR(norm, 1.0, 1e-6);
}

TEST(EmbedTest, RefusesBadInputWithTheDecodersCodes) {
  std::unique_ptr<Model> model = LoadShared(kModels[0]);
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  EXPECT_THAT(Embed(decoder, {}, Pooling::kMean, KvType::kF16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no tokens")));
  EXPECT_THAT(Embed(decoder, {1, static_cast<int32_t>(c.vocab_size)}, Pooling::kMean, KvType::kF16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside the vocabulary")));
  const std::vector<int32_t> too_long(c.context_length + 1, 1);
  EXPECT_THAT(Embed(decoder, too_long, Pooling::kLast, KvType::kF16),
              StatusIs(absl::StatusCode::kOutOfRange));
}

}  // namespace
}  // namespace tandem
