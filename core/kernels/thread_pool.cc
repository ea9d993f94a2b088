#include "core/kernels/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define TANDEM_CPU_RELAX() _mm_pause()
#else
#define TANDEM_CPU_RELAX() std::this_thread::yield()
#endif

namespace tandem {
namespace {

// Spins before a worker sleeps: long enough to bridge the gap between the kernels of one
// forward pass, short enough not to burn a core between requests.
constexpr int kSpinsBeforeSleep = 1 << 14;
constexpr int kSpinsBeforeYield = 1 << 10;
// Chunks per thread: enough for a stalled thread's share to be taken over, few enough that
// claiming them (one atomic each) stays negligible.
constexpr int64_t kChunksPerThread = 4;

thread_local int current_thread_index = 0;

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  workers_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::ThreadIndex() { return current_thread_index; }

void ThreadPool::RunChunks() {
  // [0, n) in job_chunks_ chunks of whole grains; earlier chunks get the remainder.
  const int64_t grains = (job_n_ + job_grain_ - 1) / job_grain_;
  const int64_t per = grains / job_chunks_;
  const int64_t extra = grains % job_chunks_;
  for (int64_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed); c < job_chunks_;
       c = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t first = c * per + std::min(c, extra);
    const int64_t count = per + (c < extra ? 1 : 0);
    const int64_t begin = std::min(job_n_, first * job_grain_);
    const int64_t end = std::min(job_n_, (first + count) * job_grain_);
    if (begin < end) (*job_)(begin, end);
  }
}

void ThreadPool::WorkerLoop(int index) {
  current_thread_index = index;
  uint64_t seen = 0;
  while (true) {
    uint64_t now = generation_.load(std::memory_order_acquire);
    const uint64_t rests = rests_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpinsBeforeSleep &&
                       rests_.load(std::memory_order_relaxed) == rests;
         ++spin) {
      TANDEM_CPU_RELAX();
      now = generation_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      now = generation_.load(std::memory_order_acquire);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = now;
    RunChunks();
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::Rest() { rests_.fetch_add(1, std::memory_order_release); }

void ThreadPool::ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn,
                             int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (num_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_chunks_ = std::min((n + grain - 1) / grain, kChunksPerThread * num_threads_);
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  {
    // Publishing under the mutex means a worker about to sleep cannot miss the new job.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_all();
  RunChunks();
  // Spin for the other chunks, yielding after a while so that a worker waiting for a core
  // (other processes on a busy machine) gets this one.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinsBeforeYield) {
      TANDEM_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

}  // namespace tandem
