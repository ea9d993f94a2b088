// The worker's batch scheduler: sessions' rows share steps, and each session gets exactly the
// logits it gets alone; prefill is chunked behind decode rows; a bad request fails alone.
#include "workers/batch_scheduler.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
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

std::unique_ptr<Model> LoadStories() { return LoadShared("stories260K/stories260K.gguf"); }

// A model in an activation precision: the float stories260K, and quantized files in both
// precisions (issue 31: a session's logits beside others' rows are its own in either).
struct ModelCase {
  const char* model;
  ActivationPrecision activations;
};

void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.model << " " << ActivationPrecisionName(c.activations);
}

class SchedulerInvarianceTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  std::unique_ptr<Model> Load() { return LoadShared(GetParam().model, GetParam().activations); }
};

std::vector<int32_t> Prompt(int s, int64_t n) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 37 + s * 101) % 500 + 3));
  return ids;
}

int32_t Argmax(absl::Span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// A greedy generation of `steps` tokens after `prompt`, with every logits row it saw.
struct Trace {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
};

Trace GenerateAlone(Decoder& decoder, const std::vector<int32_t>& prompt, int steps) {
  Trace trace;
  auto cache = decoder.NewCache(128, KvType::kF16);
  EXPECT_TRUE(cache.ok());
  auto logits = decoder.Forward(**cache, prompt, 0, LogitsMode::kLast);
  for (int i = 0; i < steps && logits.ok(); ++i) {
    trace.logits.insert(trace.logits.end(), logits->begin(), logits->end());
    const int32_t next = Argmax(*logits);
    trace.tokens.push_back(next);
    logits = decoder.Forward(**cache, {next}, prompt.size() + i, LogitsMode::kLast);
  }
  EXPECT_TRUE(logits.ok()) << logits.status();
  return trace;
}

Trace GenerateScheduled(BatchScheduler& scheduler, Decoder& decoder,
                        const std::vector<int32_t>& prompt, int steps) {
  Trace trace;
  auto cache = decoder.NewCache(128, KvType::kF16);
  EXPECT_TRUE(cache.ok());
  std::vector<int32_t> history;
  std::vector<float> logits;
  BatchScheduler::Work work{cache->get(), &history, prompt, 0, LogitsMode::kLast, &logits};
  absl::Status status = scheduler.Run(work);
  history = prompt;
  for (int i = 0; i < steps && status.ok(); ++i) {
    trace.logits.insert(trace.logits.end(), logits.begin(), logits.end());
    const int32_t next = Argmax(logits);
    trace.tokens.push_back(next);
    const int32_t token[] = {next};
    BatchScheduler::Work step{
        cache->get(),      &history, token, static_cast<int64_t>(history.size()),
        LogitsMode::kLast, &logits};
    status = scheduler.Run(step);
    history.push_back(next);
  }
  EXPECT_TRUE(status.ok()) << status;
  return trace;
}

// Records what every step ran.
struct StepLog {
  std::mutex mutex;
  std::vector<StepStats> steps;
  BatchScheduler::StepObserver Observer() {
    return [this](const StepStats& stats) {
      std::lock_guard<std::mutex> lock(mutex);
      steps.push_back(stats);
    };
  }
  int64_t MaxSessions() {
    std::lock_guard<std::mutex> lock(mutex);
    int64_t most = 0;
    for (const StepStats& s : steps) most = std::max(most, s.sessions);
    return most;
  }
};

TEST_P(SchedulerInvarianceTest, ConcurrentSessionsShareStepsAndGetTheirAloneLogitsBitForBit) {
  std::unique_ptr<Model> model = Load();
  ASSERT_NE(model, nullptr);
  ThreadPool alone_pool(1), pool(2);
  Decoder alone(*model, alone_pool), decoder(*model, pool);
  constexpr int kSessions = 6, kSteps = 24;
  std::vector<Trace> expected;
  for (int s = 0; s < kSessions; ++s)
    expected.push_back(GenerateAlone(alone, Prompt(s, 5 + 7 * s), kSteps));

  StepLog log;
  SchedulerOptions options;
  options.gather_seconds = 0.005;
  BatchScheduler scheduler(decoder, options, nullptr, log.Observer());
  std::vector<Trace> got(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back(
        [&, s] { got[s] = GenerateScheduled(scheduler, decoder, Prompt(s, 5 + 7 * s), kSteps); });
  }
  for (std::thread& t : threads) t.join();
  for (int s = 0; s < kSessions; ++s) {
    EXPECT_EQ(got[s].tokens, expected[s].tokens) << "session " << s;
    ASSERT_EQ(got[s].logits.size(), expected[s].logits.size()) << "session " << s;
    EXPECT_EQ(0, std::memcmp(got[s].logits.data(), expected[s].logits.data(),
                             got[s].logits.size() * sizeof(float)))
        << "session " << s;
  }
  EXPECT_GE(log.MaxSessions(), 2) << "no step ran two sessions' rows";
}

TEST_P(SchedulerInvarianceTest, LongPrefillIsChunkedBehindDecodeRowsAndKeepsItsLogits) {
  std::unique_ptr<Model> model = Load();
  ASSERT_NE(model, nullptr);
  ThreadPool pool(2);
  Decoder decoder(*model, pool);
  const std::vector<int32_t> prompt = Prompt(3, 100);
  // Reference: every row's logits of the prompt in one pass.
  ASSERT_OK_AND_ASSIGN(auto ref_cache, decoder.NewCache(128, KvType::kF16));
  ASSERT_OK_AND_ASSIGN(auto ref, decoder.Forward(*ref_cache, prompt, 0, LogitsMode::kAll));
  const std::vector<float> reference(ref.begin(), ref.end());

  StepLog log;
  SchedulerOptions options;
  options.max_batch_tokens = 16;
  BatchScheduler scheduler(decoder, options, nullptr, log.Observer());
  ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(128, KvType::kF16));
  std::vector<float> logits;
  std::vector<int32_t> history;
  std::atomic<bool> prefill_done{false};
  std::thread prefill([&] {
    BatchScheduler::Work work{cache.get(), &history, prompt, 0, LogitsMode::kAll, &logits};
    EXPECT_OK(scheduler.Run(work));
    prefill_done = true;
  });
  // A decoding session alongside: its single rows go first in every step they share.
  Trace decoded = GenerateScheduled(scheduler, decoder, Prompt(1, 4), 12);
  prefill.join();
  ASSERT_EQ(logits.size(), reference.size());
  EXPECT_EQ(0, std::memcmp(logits.data(), reference.data(), logits.size() * sizeof(float)));
  std::lock_guard<std::mutex> lock(log.mutex);
  for (const StepStats& s : log.steps) {
    EXPECT_LE(s.decode_rows + s.verify_rows + s.prefill_rows, 16);
  }
  EXPECT_GE(log.steps.size(), 100u / 16);
}

INSTANTIATE_TEST_SUITE_P(
    Models, SchedulerInvarianceTest,
    ::testing::Values(ModelCase{"stories260K/stories260K.gguf", ActivationPrecision::kInt16},
                      ModelCase{"stories260K/derived/stories260K-Q8_0.gguf",
                                ActivationPrecision::kInt8},
                      ModelCase{"fixtures/llama-Q4_K_M.gguf", ActivationPrecision::kInt16},
                      ModelCase{"fixtures/llama-Q4_K_M.gguf", ActivationPrecision::kInt8},
                      ModelCase{"fixtures/llama-Q4_0.gguf", ActivationPrecision::kInt8}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
      std::string name = std::string(info.param.model) + "_" +
                         std::string(ActivationPrecisionName(info.param.activations));
      name = name.substr(name.rfind('/') + 1);
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(BatchSchedulerTest, SessionsArrivingTogetherWithOnePromptComputeItOnce) {
  std::unique_ptr<Model> model = LoadStories();
  ASSERT_NE(model, nullptr);
  ThreadPool pool(2);
  Decoder decoder(*model, pool);
  const ModelConfig& c = model->config();
  ASSERT_OK_AND_ASSIGN(
      auto blocks, KvBlockPool::Create({c.n_layers, c.n_kv_heads, c.head_dim}, KvType::kF16, 0));
  const std::vector<int32_t> prompt = Prompt(5, 100);
  ASSERT_OK_AND_ASSIGN(auto ref_cache, decoder.NewCache(128, KvType::kF16));
  ASSERT_OK_AND_ASSIGN(auto ref, decoder.Forward(*ref_cache, prompt, 0, LogitsMode::kLast));
  const std::vector<float> reference(ref.begin(), ref.end());

  StepLog log;
  SchedulerOptions options;
  options.max_batch_tokens = 32;  // the prompt takes several steps
  BatchScheduler scheduler(decoder, options, nullptr, log.Observer());
  constexpr int kSessions = 4;
  std::vector<std::unique_ptr<KvCache>> caches;
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_OK_AND_ASSIGN(auto cache, KvCache::CreatePaged(*blocks, 128));
    caches.push_back(std::move(cache));
  }
  std::vector<std::vector<float>> logits(kSessions);
  std::vector<int64_t> adopted(kSessions);
  const std::vector<int32_t> empty_history;
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      BatchScheduler::Work work{caches[s].get(),   &empty_history, prompt, 0,
                                LogitsMode::kLast, &logits[s]};
      EXPECT_OK(scheduler.Run(work));
      adopted[s] = work.adopted;
    });
  }
  for (std::thread& t : threads) t.join();
  int64_t computed = 0;
  {
    std::lock_guard<std::mutex> lock(log.mutex);
    for (const StepStats& step : log.steps) computed += step.prefill_rows + step.decode_rows;
  }
  // 96 positions (six full blocks) once, then each session's own last block of 4.
  EXPECT_EQ(computed, 96 + kSessions * 4);
  int64_t total_adopted = 0;
  for (int s = 0; s < kSessions; ++s) {
    total_adopted += adopted[s];
    ASSERT_EQ(logits[s].size(), reference.size());
    EXPECT_EQ(0, std::memcmp(logits[s].data(), reference.data(), reference.size() * sizeof(float)))
        << "session " << s;
  }
  EXPECT_EQ(total_adopted, (kSessions - 1) * 96);
}

TEST(BatchSchedulerTest, ABadRequestFailsAloneAndClosedSchedulerRefuses) {
  std::unique_ptr<Model> model = LoadStories();
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  auto scheduler = std::make_unique<BatchScheduler>(decoder, SchedulerOptions{});
  ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(32, KvType::kF16));
  std::vector<float> logits;
  const std::vector<int32_t> bad = {1, 1 << 20}, empty = {}, too_long(40, 5);
  struct Case {
    std::vector<int32_t> tokens;
    int64_t start;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {bad, 0, absl::StatusCode::kInvalidArgument, "outside the vocabulary"},
      {empty, 0, absl::StatusCode::kInvalidArgument, "no tokens"},
      {{1, 2}, 3, absl::StatusCode::kInvalidArgument, "past the 0 cached tokens"},
      {too_long, 0, absl::StatusCode::kOutOfRange, "exceed the context of 32"},
  };
  for (const Case& c : cases) {
    BatchScheduler::Work work{cache.get(), nullptr, c.tokens, c.start, LogitsMode::kLast, &logits};
    EXPECT_THAT(scheduler->Run(work), StatusIs(c.code, HasSubstr(c.message))) << c.message;
  }
  const std::vector<int32_t> good = {1, 2, 3};
  BatchScheduler::Work work{cache.get(), nullptr, good, 0, LogitsMode::kLast, &logits};
  EXPECT_OK(scheduler->Run(work));
  EXPECT_EQ(cache->length(), 3);
  scheduler->Close();
  EXPECT_THAT(scheduler->Run(work), StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace tandem
