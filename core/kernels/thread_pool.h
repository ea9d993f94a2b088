// A fixed pool of worker threads for data-parallel loops, passed to whoever needs it (no
// singleton). ParallelFor splits a range into contiguous, deterministic chunks: chunk c of
// [0, n) is the same for a given (n, threads), and the caller's thread runs chunk 0.
//
// A forward pass issues hundreds of short ParallelFor calls, so idle workers spin briefly on
// an atomic before sleeping on a condition variable, and the caller spins for completion.
//
// Thread-safety: ParallelFor may be called from one thread at a time (it is the inference
// thread's tool); the pool is not re-entrant. ParallelFor allocates nothing.
#ifndef TANDEM_CORE_KERNELS_THREAD_POOL_H_
#define TANDEM_CORE_KERNELS_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace tandem {

class ThreadPool {
 public:
  // `num_threads` >= 1 counts the caller: 1 means everything runs on the calling thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n) and returns when all are done.
  // Chunk boundaries are multiples of `grain` (except the last end), so callers can keep
  // work units (e.g. a SIMD tile) whole.
  void ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t grain = 1);

 private:
  void WorkerLoop(int index);
  void RunChunk(int index);

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  // The current job, published by bumping generation_ and valid while pending_ > 0.
  const absl::FunctionRef<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_THREAD_POOL_H_
