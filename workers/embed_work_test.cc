// A worker's embeddings (embed_work.h): inputs are checked before any work with exact codes
// naming the input; each input's embedding through the scheduler is the same bits as the
// decoder's in process, alone or in any call; embeddings leave the sessions' output unchanged.
#include "workers/embed_work.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/engine_test_util.h"
#include "workers/worker_engine.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct CheckCase {
  const char* name;
  std::vector<std::vector<int32_t>> inputs;
  absl::StatusCode code;
  const char* message;
};

TEST(CheckEmbedInputsTest, RefusesBadInputsNamingTheIndex) {
  EmbedLimits limits;
  limits.context_size = 8;
  limits.max_inputs = 3;
  limits.max_total_tokens = 12;
  const CheckCase cases[] = {
      {"fine", {{1, 2}, {3}}, absl::StatusCode::kOk, ""},
      {"no inputs", {}, absl::StatusCode::kInvalidArgument, "no inputs"},
      {"too many inputs", {{1}, {1}, {1}, {1}}, absl::StatusCode::kInvalidArgument,
       "4 inputs exceed the limit of 3"},
      {"empty input", {{1}, {}}, absl::StatusCode::kInvalidArgument, "input 1 is empty"},
      {"longer than the context", {{1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}},
       absl::StatusCode::kOutOfRange, "input 1 has 9 tokens, more than the context of 8"},
      {"too many tokens in all", {{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {1, 1}},
       absl::StatusCode::kInvalidArgument, "input 2 brings the tokens to 13, over the limit of 12"},
      {"negative id", {{1}, {1}, {-1}}, absl::StatusCode::kInvalidArgument,
       "input 2 has token id -1 outside the vocabulary of 100"},
      {"id past the vocabulary", {{100}}, absl::StatusCode::kInvalidArgument,
       "input 0 has token id 100"},
  };
  for (const CheckCase& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status status = CheckEmbedInputs(c.inputs, 100, limits);
    EXPECT_EQ(status.code(), c.code) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

std::unique_ptr<WorkerEngine> Engine(int threads) {
  absl::StatusOr<std::string> path = testing::SharedFile("models/stories260K/stories260K.gguf");
  EXPECT_TRUE(path.ok()) << path.status();
  if (!path.ok()) return nullptr;
  WorkerOptions options;
  options.model_path = *path;
  options.threads = threads;
  options.context_size = 128;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

TEST(EmbedOnSchedulerTest, EqualsTheDecodersEmbeddingAloneOrInACall) {
  std::unique_ptr<WorkerEngine> engine = Engine(2);
  ASSERT_NE(engine, nullptr);
  const std::vector<std::vector<int32_t>> inputs = {
      testing::LongPrompt(1, 100), testing::LongPrompt(2, 5), testing::LongPrompt(3, 1)};
  ThreadPool pool(1);
  Decoder decoder(engine->model(), pool);
  for (Pooling pooling : {Pooling::kMean, Pooling::kLast}) {
    SCOPED_TRACE(PoolingName(pooling));
    absl::StatusOr<EmbedOutput> all = engine->Embed(inputs, pooling);
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->embeddings.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      absl::StatusOr<std::vector<float>> want =
          Embed(decoder, inputs[i], pooling, engine->options().kv_type);
      ASSERT_TRUE(want.ok()) << want.status();
      EXPECT_EQ(all->embeddings[i], *want) << "input " << i;
      absl::StatusOr<EmbedOutput> alone = engine->Embed({inputs[i]}, pooling);
      ASSERT_TRUE(alone.ok()) << alone.status();
      EXPECT_EQ(alone->embeddings[0], *want) << "input " << i;
    }
  }
}

TEST(EmbedOnSchedulerTest, LeavesASessionsGreedyTokensUnchanged) {
  std::unique_ptr<WorkerEngine> engine = Engine(2);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = testing::LongPrompt(4, 30);
  absl::StatusOr<int64_t> quiet = engine->OpenSession(0);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  std::vector<int32_t> expected;
  {
    std::vector<int32_t> seq = prompt;
    for (int i = 0; i < 8; ++i) {
      absl::StatusOr<int32_t> next = testing::NextAfter(*engine, *quiet, seq, 0);
      ASSERT_TRUE(next.ok()) << next.status();
      expected.push_back(*next);
      seq.push_back(*next);
    }
  }
  absl::StatusOr<int64_t> busy = engine->OpenSession(0);
  ASSERT_TRUE(busy.ok()) << busy.status();
  std::thread embedder([&] {
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(engine->Embed({testing::LongPrompt(9, 120), prompt}, Pooling::kMean).ok());
    }
  });
  std::vector<int32_t> seq = prompt, got;
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<int32_t> next = testing::NextAfter(*engine, *busy, seq, 0);
    ASSERT_TRUE(next.ok()) << next.status();
    got.push_back(*next);
    seq.push_back(*next);
  }
  embedder.join();
  EXPECT_EQ(got, expected);
}

TEST(EmbedOnSchedulerTest, StopsWhenCancelled) {
  std::unique_ptr<WorkerEngine> engine = Engine(1);
  ASSERT_NE(engine, nullptr);
  EXPECT_THAT(engine->Embed({{1, 2}}, Pooling::kMean, [] { return true; }),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("before input 0")));
}

}  // namespace
}  // namespace tandem
