#include "core/kernels/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
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
  // 13 grains of 8, each chunk a quarter (two threads) of the grains left: 4, 3, 2, then 1s.
  EXPECT_EQ(first_starts, (std::vector<int64_t>{0, 32, 56, 72, 80, 88, 96}));
}

// Guided chunks: large first, shrinking to single grains, so the threads finish within a
// grain of each other whatever the job's length.
TEST(ThreadPoolTest, ChunksShrinkToSingleGrains) {
  struct Case {
    int threads;
    int64_t n;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {
      {2, 160, {40, 30, 23, 17, 13, 10, 7, 5, 4, 3, 2, 2, 1, 1, 1, 1}},
      {2, 5, {2, 1, 1, 1}},
      {3, 20, {4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}},
  };
  for (const Case& c : cases) {
    ThreadPool pool(c.threads);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    std::mutex mu;
    pool.ParallelFor(c.n, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mu);
      chunks.emplace_back(begin, end);
    });
    std::sort(chunks.begin(), chunks.end());
    std::vector<int64_t> sizes;
    for (const auto& [begin, end] : chunks) sizes.push_back(end - begin);
    EXPECT_EQ(sizes, c.sizes) << c.threads << " threads, n " << c.n;
  }
}

// Runs two chunks that each wait (up to 10 s) for the other to start: true if they met,
// which needs two threads running them at once.
bool TwoWaitingChunksMeet(ThreadPool& pool) {
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  pool.ParallelFor(2, [&](int64_t, int64_t) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
    }
  });
  return !timed_out;
}

// Two chunks that each wait for the other to start can only finish if two threads run
// them at once.
TEST(ThreadPoolTest, RunsChunksOnTheOtherThreadsAtOnce) {
  ThreadPool pool(2);
  EXPECT_TRUE(TwoWaitingChunksMeet(pool));
}

// A stalled thread's share is taken by the others: one chunk sleeping does not keep the
// rest from completing on the other thread, and ThreadIndex names distinct threads.
TEST(ThreadPoolTest, OtherThreadsTakeOverWhileOneIsStalled) {
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<int> chunks_per_thread(2, 0);
  pool.ParallelFor(8, [&](int64_t begin, int64_t) {
    const int index = ThreadPool::ThreadIndex();
    if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_LT(index, 2);
    ++chunks_per_thread[index];
  });
  // Chunks of 2, 2, 1, 1, 1, 1: whichever thread took chunk 0 slept; the other ran the rest.
  EXPECT_EQ(chunks_per_thread[0] + chunks_per_thread[1], 6);
  EXPECT_GE(std::max(chunks_per_thread[0], chunks_per_thread[1]), 5);
}

// A worker the OS runs late (asleep, or off its core) holds nobody up: the caller runs every
// chunk itself and returns, instead of waiting for each worker to check in.
TEST(ThreadPoolTest, DoesNotWaitForAWorkerThatWakesLate) {
  std::atomic<int> wakes{0};
  ThreadPool pool(2, [&] {
    if (wakes.fetch_add(1) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  });
  std::atomic<int> worker_chunks{0};
  const auto start = std::chrono::steady_clock::now();
  pool.ParallelFor(8, [&](int64_t, int64_t) {
    if (ThreadPool::ThreadIndex() != 0) ++worker_chunks;
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(500));
  EXPECT_EQ(worker_chunks, 0);
  // The late worker still joins later jobs: two chunks that wait for each other finish.
  EXPECT_TRUE(TwoWaitingChunksMeet(pool));
}

}  // namespace
}  // namespace tandem
