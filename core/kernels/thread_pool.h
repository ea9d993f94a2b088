// A fixed pool of worker threads for data-parallel loops, passed to whoever needs it (no
// singleton). ParallelFor splits a range into contiguous, deterministic chunks (chunk c of
// [0, n) is the same for a given (n, grain, threads)), a few per thread, which the caller
// and the workers claim in turn: a thread that is slowed down (another process on its core)
// leaves its share to the others instead of holding everyone up. Which thread runs a chunk
// is not fixed, so callers keep results independent of it (ThreadIndex() names a thread's
// scratch space).
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

// The most threads a pool is given. Options that size a pool (flags) are checked against it
// before construction: a pool cannot report an error, and past the system's thread limit
// std::thread throws, which terminates the process.
inline constexpr int kMaxPoolThreads = 256;

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
  // work units (e.g. a SIMD tile) whole. A thread may run several chunks.
  void ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t grain = 1);

  // Lets the workers sleep now instead of spinning for a next job: for a caller that knows
  // the next ParallelFor is a while away (a worker's scheduler between steps, when the
  // cores are wanted by the threads that answer the requests). The next ParallelFor wakes them.
  void Rest();

  // The index (0 .. num_threads() - 1) of the calling thread within the pool running it: 0
  // for the thread calling ParallelFor, 1.. for the workers.
  static int ThreadIndex();

 private:
  void WorkerLoop(int index);
  // Claims and runs chunks of the current job until none is left.
  void RunChunks();

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  // The current job, published by bumping generation_ and valid while pending_ > 0.
  const absl::FunctionRef<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int64_t job_chunks_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> rests_{0};  // bumped by Rest(): spinning workers go to sleep
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_THREAD_POOL_H_
