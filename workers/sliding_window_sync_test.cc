// The worker's sync-by-position rule on a model with sliding-window layers (the gemma2
// fixture: window 16, layers 0 and 2 sliding): its sessions' rings drop old blocks, a request
// going back into what they dropped is re-run from the session's history, exactly, and the
// worker's KV bytes stay bounded by the window for the sliding layers.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gtest/gtest.h"
#include "workers/engine_test_util.h"
#include "workers/worker_engine.h"

namespace tandem {
namespace {

using ::tandem::testing::LongPrompt;
using ::tandem::testing::NextAfter;

std::unique_ptr<WorkerEngine> GemmaEngine(int64_t budget = 0) {
  absl::StatusOr<std::string> path = testing::SharedFile("models/fixtures/gemma2-F16.gguf");
  EXPECT_TRUE(path.ok()) << path.status();
  WorkerOptions options;
  options.role = WorkerRole::kTarget;
  options.model_path = path.ok() ? *path : "";
  options.threads = 1;
  options.context_size = 512;
  options.kv_type = KvType::kF32;
  options.kv_budget_bytes = budget;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

TEST(SlidingWindowSyncTest, SyncingBackBehindTheRingRefillsFromTheHistoryExactly) {
  std::unique_ptr<WorkerEngine> engine = GemmaEngine(), fresh = GemmaEngine();
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(fresh, nullptr);
  ASSERT_EQ(engine->model().config().sliding_window, 16);
  const std::vector<int32_t> first = LongPrompt(1, 300);
  std::vector<int32_t> second(first.begin(), first.begin() + 100);
  const std::vector<int32_t> tail = LongPrompt(2, 150);
  second.insert(second.end(), tail.begin() + 1, tail.end());

  ASSERT_OK_AND_ASSIGN(int64_t session, engine->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t reference, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t expected, NextAfter(*fresh, reference, first, 0));
  EXPECT_THAT(NextAfter(*engine, session, first, 0), testing::IsOkAndHolds(expected));
  // Global layer: 19 blocks of 300 positions; sliding layers: a few blocks each. One layer's
  // block: K and V, 2 KV heads, 16 positions, head_dim 64, f32.
  constexpr int64_t kLayerBlock = 2 * 2 * 16 * 64 * 4;
  const int64_t ring = (16 - 1 + KvCache::kRingSlack + 15) / 16 + 1;
  EXPECT_LE(engine->kv_bytes_in_use(), 19 * kLayerBlock + 2 * ring * kLayerBlock);
  EXPECT_LT(engine->kv_bytes_in_use(), 3 * 19 * kLayerBlock);  // every position kept

  // Back to position 100: the rings no longer hold what the window there needs, so the
  // worker re-runs the history from 0; the next token is the one a fresh session gets.
  ASSERT_OK_AND_ASSIGN(int64_t other, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(expected, NextAfter(*fresh, other, second, 0));
  EXPECT_THAT(NextAfter(*engine, session, second, 100), testing::IsOkAndHolds(expected));
  // Back by a rejected guess's distance (249 -> 240): resumed there, nothing before re-run.
  std::vector<int32_t> third(second.begin(), second.begin() + 240);
  for (int32_t id : {7, 99, 300, 41, 5}) third.push_back(id);
  ASSERT_OK_AND_ASSIGN(int64_t third_reference, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(expected, NextAfter(*fresh, third_reference, third, 0));
  int64_t reused = -1;
  const std::vector<int32_t> changed(third.begin() + 240, third.end() - 1);
  EXPECT_THAT(engine->Sync(session, 240, changed, nullptr, &reused),
              testing::IsOkAndHolds(static_cast<int64_t>(third.size()) - 1));
  EXPECT_EQ(reused, 240);
  EXPECT_THAT(NextAfter(*engine, session, third, 240), testing::IsOkAndHolds(expected));
}

// A second session with the same 200-token prefix adopts A's published blocks: the global
// layer's 12 full blocks before the divergence and the one ring block the window at 192
// needs (A, at 250, still holds it); its next token is a fresh session's.
TEST(SlidingWindowSyncTest, ASharedPrefixIsAdoptedWithItsRingBlocks) {
  std::unique_ptr<WorkerEngine> engine = GemmaEngine(), fresh = GemmaEngine();
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(fresh, nullptr);
  const std::vector<int32_t> shared = LongPrompt(6, 200);
  std::vector<int32_t> a_prompt = shared, b_prompt = shared;
  const std::vector<int32_t> a_tail = LongPrompt(7, 51), b_tail = LongPrompt(8, 51);
  a_prompt.insert(a_prompt.end(), a_tail.begin() + 1, a_tail.end());
  b_prompt.insert(b_prompt.end(), b_tail.begin() + 1, b_tail.end());
  ASSERT_OK_AND_ASSIGN(int64_t reference, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t b_expected, NextAfter(*fresh, reference, b_prompt, 0));

  ASSERT_OK_AND_ASSIGN(int64_t a, engine->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t b, engine->OpenSession(0));
  ASSERT_OK(engine->Sync(a, 0, a_prompt, nullptr).status());
  int64_t reused = -1;
  const std::vector<int32_t> b_synced(b_prompt.begin(), b_prompt.end() - 1);
  EXPECT_THAT(engine->Sync(b, 0, b_synced, nullptr, &reused),
              testing::IsOkAndHolds(static_cast<int64_t>(b_synced.size())));
  EXPECT_EQ(reused, 192);
  EXPECT_THAT(NextAfter(*engine, b, b_prompt, static_cast<int64_t>(b_synced.size())),
              testing::IsOkAndHolds(b_expected));
}

// The budget is split over the global blocks and the rings; when the global pool runs short,
// an idle session is preempted (both kinds of its blocks freed) and refilled exactly later.
TEST(SlidingWindowSyncTest, ABudgetOverBothPoolsPreemptsIdleSessionsThatRefillExactly) {
  // A full session of 512 positions: 32 global blocks of one layer, a ring of 32 blocks of two
  // layers (f32: 16384 bytes a layer's block); the budget holds one and a half.
  constexpr int64_t kLayerBlock = 2 * 2 * 16 * 64 * 4;
  std::unique_ptr<WorkerEngine> budgeted = GemmaEngine(3 * (32 + 64) * kLayerBlock / 2);
  std::unique_ptr<WorkerEngine> fresh = GemmaEngine();
  ASSERT_NE(budgeted, nullptr);
  ASSERT_NE(fresh, nullptr);
  const std::vector<int32_t> a_prompt = LongPrompt(4, 480), b_prompt = LongPrompt(5, 480);
  ASSERT_OK_AND_ASSIGN(int64_t reference, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t a_expected, NextAfter(*fresh, reference, a_prompt, 0));
  ASSERT_OK_AND_ASSIGN(int64_t b_reference, fresh->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t b_expected, NextAfter(*fresh, b_reference, b_prompt, 0));

  ASSERT_OK_AND_ASSIGN(int64_t a, budgeted->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t b, budgeted->OpenSession(0));
  EXPECT_THAT(NextAfter(*budgeted, a, a_prompt, 0), testing::IsOkAndHolds(a_expected));
  EXPECT_EQ(budgeted->preemptions(), 0);
  // B's 30 global blocks do not fit beside A's 30 of 48: A is idle, so it is preempted.
  EXPECT_THAT(NextAfter(*budgeted, b, b_prompt, 0), testing::IsOkAndHolds(b_expected));
  EXPECT_EQ(budgeted->preemptions(), 1);
  EXPECT_LE(budgeted->kv_bytes_in_use(), 3 * (32 + 64) * kLayerBlock / 2);
  // A comes back where it was: re-run from its history, the same token.
  EXPECT_THAT(NextAfter(*budgeted, a, a_prompt, 479), testing::IsOkAndHolds(a_expected));
  EXPECT_EQ(budgeted->preemptions(), 2);
}

}  // namespace
}  // namespace tandem
