#include "core/kernels/thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(ThreadPoolTest, CoversTheRangeOnceInWholeGrains) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 16, 100, 1001}) {
      for (int64_t grain : {1, 4, 16}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<bool> misaligned{false};
        pool.ParallelFor(
            n,
            [&](int64_t begin, int64_t end) {
              if (begin % grain != 0) misaligned = true;
              for (int64_t i = begin; i < end; ++i) ++hits[i];
            },
            grain);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << threads << " " << n << " " << i;
        EXPECT_FALSE(misaligned);
      }
    }
  }
}

TEST(ThreadPoolTest, SplitsTheSameWayEveryTime) {
  ThreadPool pool(2);
  std::vector<int64_t> first_starts, second_starts;
  std::mutex mu;
  for (auto* starts : {&first_starts, &second_starts}) {
    pool.ParallelFor(
        100,
        [&](int64_t begin, int64_t) {
          std::lock_guard<std::mutex> lock(mu);
          starts->push_back(begin);
        },
        8);
    std::sort(starts->begin(), starts->end());
  }
  EXPECT_EQ(first_starts, second_starts);
  EXPECT_EQ(first_starts, (std::vector<int64_t>{0, 56}));
}

TEST(ThreadPoolTest, UsesTheOtherThreads) {
  ThreadPool pool(2);
  std::atomic<int> distinct{0};
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(2, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) ++distinct;
  });
  EXPECT_EQ(distinct, 1);
}

}  // namespace
}  // namespace tandem
