#include "workers/inference_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;

TEST(InferenceQueueTest, RunsWorkOnOneThreadInOrderAndReturnsItsStatus) {
  InferenceQueue queue;
  std::thread::id worker;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(queue.Run([&, i] {
      if (i == 0) worker = std::this_thread::get_id();
      EXPECT_EQ(std::this_thread::get_id(), worker);
      order.push_back(i);
      return i == 2 ? absl::OutOfRangeError("prompt too long") : absl::OkStatus();
    }),
                i == 2 ? StatusIs(absl::StatusCode::kOutOfRange, "prompt too long") : IsOk());
  }
  EXPECT_NE(worker, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(InferenceQueueTest, ManyCallersNeverRunConcurrently) {
  InferenceQueue queue;
  std::atomic<int> inside{0}, max_inside{0}, total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        double waited = -1;
        ASSERT_OK(queue.Run(
            [&] {
              max_inside = std::max(max_inside.load(), ++inside);
              ++total;
              --inside;
              return absl::OkStatus();
            },
            &waited));
        EXPECT_GE(waited, 0.0);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total, 400);
  EXPECT_EQ(max_inside, 1);
  EXPECT_EQ(queue.depth(), 0);
}

TEST(InferenceQueueTest, ClosedQueueRefusesNewWork) {
  InferenceQueue queue;
  queue.Close();
  bool ran = false;
  EXPECT_THAT(queue.Run([&] {
    ran = true;
    return absl::OkStatus();
  }),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace tandem
