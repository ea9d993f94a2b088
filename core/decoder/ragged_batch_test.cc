// Decoder::ForwardBatch: rows of several sessions in one pass give each session exactly the
// logits it gets running alone, one token at a time, at any batch composition and thread
// count; bad batches are refused before any cache changes.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/test_data.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<Model> LoadShared(const std::string& relative) {
  absl::StatusOr<std::string> path = testing::SharedFile("models/" + relative);
  EXPECT_TRUE(path.ok()) << path.status();
  if (!path.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(*path);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// Session s's tokens: distinct, in-vocabulary, not degenerate.
std::vector<int32_t> SessionTokens(int s, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) {
    ids.push_back(static_cast<int32_t>((i * 7919 + 13 + s * 104729) % vocab));
  }
  return ids;
}

// Logits of every position of `tokens`, each run alone after the ones before (one thread).
std::vector<float> Stepped(const Model& model, KvType kv, const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  Decoder decoder(model, pool);
  auto cache = decoder.NewCache(64, kv);
  EXPECT_TRUE(cache.ok());
  std::vector<float> all;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto one = decoder.Forward(**cache, {tokens[i]}, i, LogitsMode::kLast);
    EXPECT_TRUE(one.ok()) << one.status();
    if (!one.ok()) return {};
    all.insert(all.end(), one->begin(), one->end());
  }
  return all;
}

struct RaggedCase {
  std::string model;
  KvType kv;
  int threads;
};

class RaggedBatchTest : public ::testing::TestWithParam<RaggedCase> {};

// Per step, each session's rows (count, logits mode); three sessions, four steps.
struct StepRows {
  int64_t n;
  LogitsMode mode;
};
const StepRows kSteps[4][3] = {
    {{10, LogitsMode::kLast}, {5, LogitsMode::kAll}, {1, LogitsMode::kLast}},
    {{1, LogitsMode::kAll}, {4, LogitsMode::kAll}, {7, LogitsMode::kNone}},
    {{5, LogitsMode::kAll}, {1, LogitsMode::kLast}, {1, LogitsMode::kAll}},
    {{1, LogitsMode::kLast}, {9, LogitsMode::kAll}, {3, LogitsMode::kLast}},
};

TEST_P(RaggedBatchTest, EachSessionsRowsEqualRunningAloneBitForBit) {
  const RaggedCase& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model);
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> reference;
  for (int s = 0; s < 3; ++s) {
    tokens.push_back(SessionTokens(s, 20, vocab));
    reference.push_back(Stepped(*model, c.kv, tokens[s]));
  }
  ThreadPool pool(c.threads);
  Decoder decoder(*model, pool);
  std::vector<std::unique_ptr<KvCache>> caches;
  for (int s = 0; s < 3; ++s) {
    ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(64, c.kv));
    caches.push_back(std::move(cache));
  }
  int64_t done[3] = {0, 0, 0};
  for (int step = 0; step < 4; ++step) {
    std::vector<ForwardSegment> segments;
    // Alternate the order of sessions in the batch: composition must not matter.
    const int order[3] = {step % 2 == 0 ? 0 : 2, 1, step % 2 == 0 ? 2 : 0};
    for (int s : order) {
      const StepRows rows = kSteps[step][s];
      segments.push_back({caches[s].get(), absl::MakeConstSpan(tokens[s]).subspan(done[s], rows.n),
                          done[s], rows.mode});
    }
    ASSERT_OK_AND_ASSIGN(absl::Span<const float> logits, decoder.ForwardBatch(segments));
    int64_t row = 0;
    for (size_t j = 0; j < segments.size(); ++j) {
      const ForwardSegment& segment = segments[j];
      const int s = order[j];
      const int64_t n = static_cast<int64_t>(segment.tokens.size());
      const int64_t first = segment.logits == LogitsMode::kAll    ? 0
                            : segment.logits == LogitsMode::kLast ? n - 1
                                                                  : n;
      for (int64_t i = first; i < n; ++i, ++row) {
        const int64_t position = segment.start + i;
        ASSERT_EQ(0, std::memcmp(logits.data() + row * vocab,
                                 reference[s].data() + position * vocab, vocab * sizeof(float)))
            << "session " << s << " position " << position << " step " << step;
      }
      done[s] += n;
      EXPECT_EQ(caches[s]->length(), done[s]);
    }
    EXPECT_EQ(row * vocab, static_cast<int64_t>(logits.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, RaggedBatchTest,
    ::testing::Values(RaggedCase{"stories260K/stories260K.gguf", KvType::kF32, 1},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kF16, 2},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kI8, 3},
                      RaggedCase{"stories260K/derived/stories260K-Q4_0.gguf", KvType::kF16, 2},
                      RaggedCase{"stories260K/derived/stories260K-Q8_0.gguf", KvType::kF16, 2},
                      RaggedCase{"llama-2-tiny-random/llama-2-tiny-random.gguf", KvType::kF16, 2},
                      RaggedCase{"fixtures/llama3-F16.gguf", KvType::kF32, 2},
                      RaggedCase{"fixtures/qwen3-F16.gguf", KvType::kF16, 2},
                      RaggedCase{"fixtures/phi3-F16.gguf", KvType::kF32, 2},
                      RaggedCase{"fixtures/gemma2-F16.gguf", KvType::kF32, 2},
                      RaggedCase{"fixtures/gemma3-F16.gguf", KvType::kF16, 2}),
    [](const ::testing::TestParamInfo<RaggedCase>& info) {
      std::string name = info.param.model + "_" + std::string(KvTypeName(info.param.kv)) + "_t" +
                         std::to_string(info.param.threads);
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(RaggedBatchTest, BadBatchesAreRefusedBeforeAnyCacheChanges) {
  std::unique_ptr<Model> model = LoadShared("stories260K/stories260K.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(auto a, decoder.NewCache(64, KvType::kF16));
  ASSERT_OK_AND_ASSIGN(auto b, decoder.NewCache(600, KvType::kF16));
  const std::vector<int32_t> four = {1, 2, 3, 4};
  ASSERT_OK(decoder.Forward(*a, four, 0, LogitsMode::kNone).status());
  const std::vector<int32_t> bad_id = {1, 1 << 20};
  const std::vector<int32_t> many(Decoder::kMaxChunk, 5);
  struct Case {
    std::vector<ForwardSegment> segments;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, absl::StatusCode::kInvalidArgument, "no segments"},
      {{{a.get(), four, 2, LogitsMode::kLast}, {a.get(), four, 0, LogitsMode::kLast}},
       absl::StatusCode::kInvalidArgument,
       "share one cache"},
      {{{a.get(), four, 2, LogitsMode::kLast}, {b.get(), bad_id, 0, LogitsMode::kLast}},
       absl::StatusCode::kInvalidArgument,
       "outside the vocabulary"},
      {{{a.get(), four, 2, LogitsMode::kLast}, {b.get(), four, 3, LogitsMode::kLast}},
       absl::StatusCode::kInvalidArgument,
       "past the 0 cached tokens"},
      {{{a.get(), four, 62, LogitsMode::kLast}}, absl::StatusCode::kInvalidArgument, "past the 4"},
      {{{a.get(), four, 2, LogitsMode::kLast}, {b.get(), many, 0, LogitsMode::kLast}},
       absl::StatusCode::kInvalidArgument,
       "exceed the pass limit"},
      {{{nullptr, four, 0, LogitsMode::kLast}}, absl::StatusCode::kInvalidArgument, "no cache"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(decoder.ForwardBatch(c.segments).status(), StatusIs(c.code, HasSubstr(c.message)))
        << c.message;
    EXPECT_EQ(a->length(), 4) << c.message;
    EXPECT_EQ(b->length(), 0) << c.message;
  }
}

}  // namespace
}  // namespace tandem
