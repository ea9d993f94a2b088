#include "core/kernels/thread_pool.h"

#include <algorithm>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#define TANDEM_CPU_RELAX() _mm_pause()
#else
#define TANDEM_CPU_RELAX() std::this_thread::yield()
#endif

namespace tandem {
namespace {

// Spins before a worker sleeps (about 50 us on an EPYC, 100 us where a pause is slower):
// long enough to bridge the gap between the kernels of one forward pass, short enough not to
// burn a core between forward passes. 1 << 14 (400 us) kept a worker spinning through a
// small draft's serial steps after every verify, taking the core (and, in one autogroup, the
// CPU share) the inference thread needed on a loaded machine.
constexpr int kSpinsBeforeSleep = 1 << 11;
constexpr int kSpinsBeforeYield = 1 << 10;
// Guided chunks: each takes 1 / (kGuidedShare · threads) of the grains still unassigned (at
// least one), so a job starts with large chunks (one claim, one prefetch stream each) and ends
// with single grains, and the threads finish within about a grain of each other. Equal
// chunks (4 a thread) left up to an eighth of a job on one thread at its end: at a 5-row
// verify of the 360M shape, ~15 % of the pass was the other thread waiting. A stalled
// thread's share is still taken over, chunk by chunk.
constexpr int64_t kGuidedShare = 2;

// claim_ = [generation:32][chunks:16][next:16].
uint64_t PackClaim(uint32_t generation, int64_t chunks) {
  return (uint64_t{generation} << 32) | (static_cast<uint64_t>(chunks) << 16);
}
uint32_t ClaimGeneration(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
int64_t ClaimChunks(uint64_t claim) { return static_cast<int64_t>((claim >> 16) & 0xffff); }
int64_t ClaimNext(uint64_t claim) { return static_cast<int64_t>(claim & 0xffff); }

thread_local int current_thread_index = 0;

}  // namespace

ThreadPool::ThreadPool(int num_threads) : ThreadPool(num_threads, nullptr) {}

ThreadPool::ThreadPool(int num_threads, std::function<void()> on_worker_wake)
    : num_threads_(std::max(1, num_threads)), on_worker_wake_(std::move(on_worker_wake)) {
  workers_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
    claim_.store(PackClaim(++generation_, 0), std::memory_order_seq_cst);
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::ThreadIndex() { return current_thread_index; }

void ThreadPool::RunChunks(uint32_t generation) {
  uint64_t claim = claim_.load(std::memory_order_acquire);
  while (ClaimGeneration(claim) == generation && ClaimNext(claim) < ClaimChunks(claim)) {
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // `claim` now holds the current value
    }
    // Chunk c of the job: grains [bounds_[c], bounds_[c + 1]). The job's fields stay valid
    // until this chunk is counted done.
    const int64_t c = ClaimNext(claim);
    const int64_t begin = std::min(job_n_, bounds_[c] * job_grain_);
    const int64_t end = std::min(job_n_, bounds_[c + 1] * job_grain_);
    if (begin < end) (*job_)(begin, end);
    done_.fetch_add(1, std::memory_order_acq_rel);
    claim = claim_.load(std::memory_order_acquire);
  }
}

uint32_t ThreadPool::AwaitJob(uint32_t seen) {
  uint32_t now = ClaimGeneration(claim_.load(std::memory_order_acquire));
  const uint64_t rests = rests_.load(std::memory_order_acquire);
  for (int spin = 0;
       now == seen && spin < kSpinsBeforeSleep && rests_.load(std::memory_order_relaxed) == rests;
       ++spin) {
    TANDEM_CPU_RELAX();
    now = ClaimGeneration(claim_.load(std::memory_order_acquire));
  }
  if (now != seen) return now;
  std::unique_lock<std::mutex> lock(mutex_);
  // Announced before the check (both seq_cst): either ParallelFor sees a sleeper and
  // notifies under the mutex, or this check sees its job.
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  work_ready_.wait(lock,
                   [&] { return ClaimGeneration(claim_.load(std::memory_order_seq_cst)) != seen; });
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return ClaimGeneration(claim_.load(std::memory_order_acquire));
}

void ThreadPool::WorkerLoop(int index) {
  current_thread_index = index;
  uint32_t seen = 0;
  while (true) {
    seen = AwaitJob(seen);
    if (stopping_.load(std::memory_order_acquire)) return;
    if (on_worker_wake_) on_worker_wake_();
    RunChunks(seen);
  }
}

void ThreadPool::Rest() { rests_.fetch_add(1, std::memory_order_release); }

int64_t ThreadPool::GuidedBounds(int64_t grains) {
  int64_t chunks = 0, next = 0;
  bounds_[0] = 0;
  while (next < grains) {
    const int64_t rest = grains - next;
    const int64_t size = chunks + 1 == kMaxChunks
                             ? rest
                             : std::max<int64_t>(1, (rest + kGuidedShare * num_threads_ - 1) /
                                                        (kGuidedShare * num_threads_));
    next += size;
    bounds_[++chunks] = next;
  }
  return chunks;
}

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
  const int64_t chunks = GuidedBounds((n + grain - 1) / grain);
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = ++generation_;
  // Publishes the fields above (the release half of seq_cst) to whoever claims a chunk.
  claim_.store(PackClaim(generation, chunks), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    // Taking the mutex orders this after a sleeper's check: it is waiting, and is woken.
    { std::lock_guard<std::mutex> lock(mutex_); }
    work_ready_.notify_all();
  }
  RunChunks(generation);
  // Spin for chunks other threads claimed, yielding after a while so that a worker waiting
  // for a core (other processes on a busy machine) gets this one.
  for (int spin = 0; done_.load(std::memory_order_acquire) != chunks; ++spin) {
    if (spin < kSpinsBeforeYield) {
      TANDEM_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

}  // namespace tandem
