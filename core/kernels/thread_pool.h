// A fixed pool of worker threads for data-parallel loops, passed to whoever needs it (no
// singleton). ParallelFor splits a range into contiguous, deterministic chunks (chunk c of
// [0, n) is the same for a given (n, grain, threads)), large ones first and single grains
// last ("guided"), which the caller and the workers claim in turn: the threads finish close
// together, and a thread that is slowed down (another process on its core) leaves its share
// to the others instead of holding everyone up. Which thread runs a chunk
// is not fixed, so callers keep results independent of it (ThreadIndex() names a thread's
// scratch space).
//
// A forward pass issues hundreds of short ParallelFor calls, so idle workers spin briefly on
// an atomic before sleeping on a condition variable, and the caller spins for completion.
// Completion counts chunks, not threads: a worker that is asleep or off its core when a job
// comes joins late or not at all, and the caller (which claims chunks too) never waits for
// it — on a busy machine, or for the odd parallel kernel of a small model after the workers
// have gone to sleep, waiting for every worker to wake cost milliseconds per call.
//
// Thread-safety: ParallelFor may be called from one thread at a time (it is the inference
// thread's tool); the pool is not re-entrant. ParallelFor allocates nothing.
#ifndef TANDEM_CORE_KERNELS_THREAD_POOL_H_
#define TANDEM_CORE_KERNELS_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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
  // For tests: `on_worker_wake` runs on a worker each time it sees a new job, before it
  // claims a chunk (a stand-in for a worker that the OS runs late).
  ThreadPool(int num_threads, std::function<void()> on_worker_wake);
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
  // Waits (spinning, then asleep) for a job other than `seen`; returns its generation.
  uint32_t AwaitJob(uint32_t seen);
  // Claims and runs chunks of job `generation` until none is left (or another job began).
  void RunChunks(uint32_t generation);
  // Splits `grains` into guided chunks (bounds_); returns their count (<= kMaxChunks).
  int64_t GuidedBounds(int64_t grains);

  // Most chunks of a job: claim_'s 16-bit fields hold the count.
  static constexpr int64_t kMaxChunks = 1024;

  const int num_threads_;
  const std::function<void()> on_worker_wake_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  // The current job: its fields are written before claim_ publishes it and stay valid until
  // done_ reaches its chunk count (a chunk is only run after claiming it under its job's
  // generation, so a late worker never reads a finished job's fields).
  const absl::FunctionRef<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int64_t bounds_[kMaxChunks + 1] = {};  // chunk c: grains [bounds_[c], bounds_[c + 1])
  // [generation:32][chunks:16][next chunk:16]: claiming a chunk checks the job in one CAS.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};    // chunks of the current job that finished
  uint32_t generation_ = 0;         // the caller's count of jobs (claim_'s top bits)
  std::atomic<int> sleepers_{0};    // workers asleep (or about to be) on work_ready_
  std::atomic<uint64_t> rests_{0};  // bumped by Rest(): spinning workers go to sleep
  std::atomic<bool> stopping_{false};
};

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_THREAD_POOL_H_
