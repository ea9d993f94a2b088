// Decoder::ForwardBatch: rows of several sessions in one pass give each session exactly the
// logits it gets running alone, one token at a time, at any batch composition and thread
// count, for every architecture, with private or paged caches (sliding-window layers' rings far
// past their window included); bad batches are refused before any cache changes.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_memory.h"
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

// Session s's tokens: distinct, in-vocabulary, not degenerate.
std::vector<int32_t> SessionTokens(int s, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) {
    ids.push_back(static_cast<int32_t>((i * 7919 + 13 + s * 104729) % vocab));
  }
  return ids;
}

// Logits of every position of `tokens`, each run alone after the ones before (one thread), in
// a cache that keeps every position of every layer.
std::vector<float> Stepped(const Model& model, KvType kv, const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  Decoder decoder(model, pool);
  const ModelConfig& c = model.config();
  auto cache = KvCache::Create({c.n_layers, c.n_kv_heads, c.head_dim, 256}, kv);
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
  ActivationPrecision activations = ActivationPrecision::kInt16;
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
  std::unique_ptr<Model> model = LoadShared(c.model, c.activations);
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

std::string CaseName(const ::testing::TestParamInfo<RaggedCase>& info) {
  std::string name = info.param.model + "_" + std::string(KvTypeName(info.param.kv)) + "_t" +
                     std::to_string(info.param.threads) + "_" +
                     std::string(ActivationPrecisionName(info.param.activations));
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, RaggedBatchTest,
    ::testing::Values(RaggedCase{"stories260K/stories260K.gguf", KvType::kF32, 1},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kF16, 2},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kI8, 3},
                      RaggedCase{"stories260K/derived/stories260K-Q4_0.gguf", KvType::kF16, 2},
                      RaggedCase{"stories260K/derived/stories260K-Q8_0.gguf", KvType::kF16, 2},
                      RaggedCase{"llama-2-tiny-random/llama-2-tiny-random.gguf", KvType::kF16, 2}),
    CaseName);

// Every architecture's fixture at one and two threads.
const RaggedCase kArchitectureCases[] = {
    {"fixtures/llama-F16.gguf", KvType::kF32, 1},  {"fixtures/llama-F16.gguf", KvType::kF16, 2},
    {"fixtures/llama3-F16.gguf", KvType::kF16, 1}, {"fixtures/llama3-F16.gguf", KvType::kF32, 2},
    {"fixtures/qwen2-F16.gguf", KvType::kF32, 1},  {"fixtures/qwen2-F16.gguf", KvType::kI8, 2},
    {"fixtures/qwen3-F16.gguf", KvType::kF32, 1},  {"fixtures/qwen3-F16.gguf", KvType::kF16, 2},
    {"fixtures/phi3-F16.gguf", KvType::kF16, 1},   {"fixtures/phi3-F16.gguf", KvType::kF32, 2},
    {"fixtures/gemma2-F16.gguf", KvType::kF16, 1}, {"fixtures/gemma2-F16.gguf", KvType::kF32, 2},
    {"fixtures/gemma3-F16.gguf", KvType::kF32, 1}, {"fixtures/gemma3-F16.gguf", KvType::kF16, 2},
};

INSTANTIATE_TEST_SUITE_P(Architectures, RaggedBatchTest, ::testing::ValuesIn(kArchitectureCases),
                         CaseName);

// --- #31 step-overhead ---
class DecodeStepTest : public ::testing::TestWithParam<RaggedCase> {};

// A decode step of many sessions (every segment one row: Decoder's fused path, each (row, KV
// head) unit making its own q, k, v ready before attending) gives every row the bits of the
// same position inside a prefill (the path that makes all rows ready first), at any thread
// count, with enough sessions and context that the step's attention is split across threads.
TEST_P(DecodeStepTest, DecodeStepsOfManySessionsEqualTheirPrefillBitForBit) {
  const RaggedCase& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model, c.activations);
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size;
  constexpr int kSessions = 16, kSteps = 4;
  ThreadPool one(1);
  Decoder prefill(*model, one);
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> reference;
  for (int s = 0; s < kSessions; ++s) {
    tokens.push_back(SessionTokens(s, 40 + s, vocab));
    ASSERT_OK_AND_ASSIGN(auto cache, prefill.NewCache(64, c.kv));
    ASSERT_OK_AND_ASSIGN(absl::Span<const float> all,
                         prefill.Forward(*cache, tokens[s], 0, LogitsMode::kAll));
    reference.emplace_back(all.begin(), all.end());
  }
  ThreadPool pool(c.threads);
  Decoder decoder(*model, pool);
  std::vector<std::unique_ptr<KvCache>> caches;
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(64, c.kv));
    const int64_t prompt = static_cast<int64_t>(tokens[s].size()) - kSteps;
    ASSERT_OK(
        decoder.Forward(*cache, absl::MakeConstSpan(tokens[s]).first(prompt), 0, LogitsMode::kNone)
            .status());
    caches.push_back(std::move(cache));
  }
  for (int step = 0; step < kSteps; ++step) {
    std::vector<ForwardSegment> segments;
    for (int s = 0; s < kSessions; ++s) {
      const int64_t position = static_cast<int64_t>(tokens[s].size()) - kSteps + step;
      segments.push_back({caches[s].get(), absl::MakeConstSpan(tokens[s]).subspan(position, 1),
                          position, LogitsMode::kLast});
    }
    ASSERT_OK_AND_ASSIGN(absl::Span<const float> logits, decoder.ForwardBatch(segments));
    ASSERT_EQ(static_cast<int64_t>(logits.size()), kSessions * vocab);
    for (int s = 0; s < kSessions; ++s) {
      const int64_t position = segments[s].start;
      ASSERT_EQ(0, std::memcmp(logits.data() + s * vocab, reference[s].data() + position * vocab,
                               vocab * sizeof(float)))
          << "session " << s << " position " << position;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, DecodeStepTest,
    ::testing::Values(RaggedCase{"stories260K/stories260K.gguf", KvType::kF32, 1},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kF16, 2},
                      RaggedCase{"stories260K/stories260K.gguf", KvType::kI8, 3},
                      RaggedCase{"fixtures/qwen2-F16.gguf", KvType::kF16, 2},
                      RaggedCase{"fixtures/qwen3-F16.gguf", KvType::kF32, 2},
                      RaggedCase{"fixtures/gemma3-F16.gguf", KvType::kF16, 3},
                      RaggedCase{"fixtures/llama-Q8_0.gguf", KvType::kF16, 2,
                                 ActivationPrecision::kInt8},
                      RaggedCase{"fixtures/llama-Q4_K_M.gguf", KvType::kI8, 3,
                                 ActivationPrecision::kInt8}),
    CaseName);
// --- end ---

// --- #31 activations-invariance ---
// The quantized fixtures (Q8_0, Q4_0 with a Q6_K output, Q4_K_M's Q4_K and Q6_K, Q5_0,
// IQ4_NL, a qwen3 Q4_K_M) in both activation precisions, at one and two threads.
std::vector<RaggedCase> QuantizedCases() {
  std::vector<RaggedCase> cases;
  for (const char* file :
       {"fixtures/llama-Q8_0.gguf", "fixtures/llama-Q4_0.gguf", "fixtures/llama-Q4_K_M.gguf",
        "fixtures/llama-Q5_0.gguf", "fixtures/llama-IQ4_NL.gguf", "fixtures/qwen3-Q4_K_M.gguf"}) {
    for (ActivationPrecision p : {ActivationPrecision::kInt16, ActivationPrecision::kInt8}) {
      cases.push_back({file, KvType::kF16, 1, p});
      cases.push_back({file, KvType::kF32, 2, p});
    }
  }
  for (const char* file :
       {"stories260K/derived/stories260K-Q4_0.gguf", "stories260K/derived/stories260K-Q8_0.gguf"}) {
    cases.push_back({file, KvType::kF16, 2, ActivationPrecision::kInt8});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Quantized, RaggedBatchTest, ::testing::ValuesIn(QuantizedCases()),
                         CaseName);
// --- end ---

class PagedRaggedBatchTest : public ::testing::TestWithParam<RaggedCase> {};

// Three sessions of 150 tokens in paged caches over one KvMemory (the worker's: gemma's
// sliding layers in rings, recycled far past their window of 16), run in steps of varying
// rows and modes, with verify-style rollbacks, beside each other: every row equals the session
// alone, one token at a time, in a cache keeping everything.
TEST_P(PagedRaggedBatchTest, SessionsFarPastTheWindowEqualRunningAloneBitForBit) {
  const RaggedCase& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model, c.activations);
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size, length = 150;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> reference;
  for (int s = 0; s < 3; ++s) {
    tokens.push_back(SessionTokens(s, length, vocab));
    reference.push_back(Stepped(*model, c.kv, tokens[s]));
  }
  ThreadPool pool(c.threads);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(decoder.CacheShape(256), c.kv, 0));
  std::vector<std::unique_ptr<KvCache>> caches;
  for (int s = 0; s < 3; ++s) {
    ASSERT_OK_AND_ASSIGN(auto cache, KvCache::CreatePaged(*memory, 256));
    caches.push_back(std::move(cache));
  }
  constexpr int64_t kRows[] = {1, 5, 1, 16, 3, 33, 1, 2};
  constexpr LogitsMode kModes[] = {LogitsMode::kLast, LogitsMode::kAll, LogitsMode::kNone};
  int64_t done[3] = {0, 0, 0};
  for (int step = 0; step < 200 && (done[0] < length || done[1] < length || done[2] < length);
       ++step) {
    std::vector<ForwardSegment> segments;
    std::vector<int> order;
    for (int s : {step % 3, (step + 1) % 3, (step + 2) % 3}) {
      if (done[s] == length) continue;
      // Every fourth step a session goes back two positions first (a rejected guess).
      const int64_t start = (step + s) % 4 == 3 && done[s] >= 2 ? done[s] - 2 : done[s];
      const int64_t n = std::min(kRows[(step + s) % 8], length - start);
      segments.push_back({caches[s].get(), absl::MakeConstSpan(tokens[s]).subspan(start, n), start,
                          kModes[(step + 2 * s) % 3]});
      order.push_back(s);
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
      done[s] = segment.start + n;
      EXPECT_EQ(caches[s]->length(), done[s]);
    }
  }
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(done[s], length);
    if (model->config().sliding_window > 0) {
      EXPECT_GT(caches[s]->resume_floor(), 0);  // the ring dropped blocks
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, PagedRaggedBatchTest,
                         ::testing::ValuesIn(kArchitectureCases), CaseName);

// --- #31 activations-invariance: K-quant files in paged caches, with rollbacks ---
INSTANTIATE_TEST_SUITE_P(Quantized, PagedRaggedBatchTest,
                         ::testing::Values(RaggedCase{"fixtures/llama-Q4_K_M.gguf", KvType::kF16, 2,
                                                      ActivationPrecision::kInt8},
                                           RaggedCase{"fixtures/qwen3-Q4_K_M.gguf", KvType::kF16, 2,
                                                      ActivationPrecision::kInt8},
                                           RaggedCase{"fixtures/llama-Q4_K_M.gguf", KvType::kF16, 2,
                                                      ActivationPrecision::kInt16}),
                         CaseName);
// --- end ---

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
