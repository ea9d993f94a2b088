#include "workers/inference_queue.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;

TEST(InferenceQueueTest, RunsWorkInOrderOnTheCallersThreadAndReturnsItsStatus) {
  InferenceQueue queue;
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(queue.Run([&, i] {
      EXPECT_EQ(std::this_thread::get_id(), caller);  // no hand-off when nobody waits
      order.push_back(i);
      return i == 2 ? absl::OutOfRangeError("prompt too long") : absl::OkStatus();
    }),
                i == 2 ? StatusIs(absl::StatusCode::kOutOfRange, "prompt too long") : IsOk());
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(queue.depth(), 0);
}

// Callers arriving while work runs wait and then run in arrival order.
TEST(InferenceQueueTest, WaitingCallersRunInArrivalOrder) {
  InferenceQueue queue;
  std::mutex mu;
  std::vector<int> order;
  std::atomic<bool> release{false};
  std::thread first([&] {
    ASSERT_OK(queue.Run([&] {
      while (!release) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(0);
      return absl::OkStatus();
    }));
  });
  while (queue.depth() < 1) std::this_thread::yield();
  std::vector<std::thread> later;
  for (int i = 1; i <= 3; ++i) {
    later.emplace_back([&, i] {
      ASSERT_OK(queue.Run([&, i] {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
        return absl::OkStatus();
      }));
    });
    while (queue.depth() < i + 1) std::this_thread::yield();  // queued in this order
  }
  release = true;
  first.join();
  for (std::thread& t : later) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
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
