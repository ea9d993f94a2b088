// One scheduler per worker: the model work of every attached session runs here, gathered
// step by step into one ragged batch (Decoder::ForwardBatch) under a token budget, so each
// weight is read once for all sessions' rows. Replaces the one-request-at-a-time queue.
//
//   BatchScheduler scheduler(decoder, options, reclaim);
//   BatchScheduler::Work work{cache, &history, tokens, start, LogitsMode::kAll, &logits};
//   RETURN_IF_ERROR(scheduler.Run(work));   // blocks until its rows have run
//
// A step: decode and verify work (at most kSmallWork rows left) goes first, oldest first; the
// budget left is filled by prefill work in chunks, so a long prompt delays others by at most
// one chunk (chunked prefill). Work runs only when its cache can get the blocks its rows need:
// the scheduler first asks `reclaim` to free idle sessions' blocks (preemption). When no
// queued work can get memory and nothing else runs, the oldest waiting work fails with
// kResourceExhausted (what holds the memory is in use).
//
// Shared prefixes: prefill work whose next rows start a 16-position block adopts the blocks
// other sessions published for the same tokens (KvCache::AdoptCachedPrefix) instead of
// computing them, and every step publishes the full blocks it wrote. Two sessions about to
// compute the same block in one step do not: the later waits a step and adopts it.
//
// Gathering: sessions whose rows ran in the last step usually come back within a round trip
// (the next draft step, the next verify). A step waits for them a short while (at most
// `gather_seconds`, and half the last step's time: a straggler left out costs a step of its
// own) before it starts without them.
//
// Batch invariance (decoder.h) makes a session's logits independent of which other rows share
// its steps, so output is unchanged by load.
//
// Thread-safe: Run may be called from any thread; one Run per cache at a time.
#ifndef TANDEM_WORKERS_BATCH_SCHEDULER_H_
#define TANDEM_WORKERS_BATCH_SCHEDULER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"

namespace tandem {

struct SchedulerOptions {
  int64_t max_batch_tokens = 128;  // rows per step, at most Decoder::kMaxChunk
  double gather_seconds = 0.008;   // the longest a step waits for the last step's sessions
};

// What one step ran, for metrics.
struct StepStats {
  int64_t decode_rows = 0;   // single rows that want logits (decode, draft steps)
  int64_t verify_rows = 0;   // rows of work that wants every row's logits
  int64_t prefill_rows = 0;  // the rest: prompt and sync chunks
  int64_t adopted_rows = 0;  // positions taken from shared prefix blocks instead
  int64_t sessions = 0;
  double seconds = 0;  // the forward pass
};

class BatchScheduler {
 public:
  // Work with at most this many rows left is scheduled first, whole.
  static constexpr int64_t kSmallWork = 32;

  // One request's rows. The caller owns everything pointed to and blocks in Run meanwhile.
  struct Work {
    KvCache* cache = nullptr;
    // The session's tokens before `start` ([0, start) at least), for shared prefixes; may be
    // null.
    const std::vector<int32_t>* history = nullptr;
    absl::Span<const int32_t> tokens;  // at [start, start + n)
    int64_t start = 0;
    LogitsMode mode = LogitsMode::kLast;
    std::vector<float>* logits = nullptr;  // receives the rows' logits ([rows, vocab])
    // When set (sized [n, dim]), receives every row's final-norm hidden states
    // (ForwardSegment::hidden): an embedding's work (workers/embed_work.h).
    std::vector<float>* hidden = nullptr;
    // Filled in by the scheduler:
    double queue_seconds = 0;  // from Run until its first rows ran
    int64_t adopted = 0;       // positions taken from shared prefix blocks, not computed
  };

  // Makes `blocks` KV blocks available in each pool (global layers, sliding layers' rings),
  // freeing idle sessions' blocks if needed, and returns whether they are. Null: memory is
  // never short.
  using Reclaim = std::function<bool(const KvBlockDemand& blocks)>;
  // Called after every step (on the scheduler's thread).
  using StepObserver = std::function<void(const StepStats&)>;

  BatchScheduler(Decoder& decoder, const SchedulerOptions& options, Reclaim reclaim = nullptr,
                 StepObserver observer = nullptr);
  ~BatchScheduler();  // Close(), then waits for the thread
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Runs `work`'s rows in one or more steps; the decoder's errors for its rows as is;
  // kUnavailable once closed; kResourceExhausted as above.
  absl::Status Run(Work& work);

  // Work queued or running now.
  int64_t depth() const;

  // Sessions whose rows ran in the last step.
  int64_t last_step_sessions() const { return last_step_sessions_.load(std::memory_order_relaxed); }

  // Refuses new work (kUnavailable) and fails queued work; the running step finishes.
  void Close();

 private:
  struct Pending {
    Work* work;
    int64_t done = 0;  // rows run (or adopted) so far
    bool finished = false;
    absl::Status status;
    bool started = false;
    std::chrono::steady_clock::time_point enqueued;
    std::vector<int32_t> prefix;  // history[0, start) + tokens, when shared prefixes need it
  };
  // A chunk of a pending work chosen for this step.
  struct Chunk {
    Pending* pending;
    int64_t rows;
  };

  void Loop();
  // Waits (lock held) for the last step's sessions, within the gather window.
  void Gather(std::unique_lock<std::mutex>& lock);
  // Chooses this step's chunks (lock held).
  void Select(std::vector<Chunk>* chunks);
  // Shared prefixes: adopts published blocks for `pending`'s next rows; returns false when
  // another chunk of this step computes the same block (it waits a step, then adopts it).
  bool SharePrefix(Pending& pending, absl::flat_hash_set<uint64_t>* computing);
  // The whole sequence of `pending` (history + tokens), built once.
  const std::vector<int32_t>& Prefix(Pending& pending);
  // Whether `chunk`'s rows can get their blocks beside `blocks_taken` for earlier chunks,
  // reclaiming idle sessions' if needed; adds its blocks to `blocks_taken` if so.
  bool HasMemory(const Chunk& chunk, KvBlockDemand* blocks_taken);
  void RunStep(std::vector<Chunk>& chunks);
  // Copies the logits rows `chunk`'s segment asked for from `rows` into its work's buffer;
  // returns the end of what it read.
  const float* Deliver(const Chunk& chunk, const ForwardSegment& segment, const float* rows) const;
  void Finish(Pending& pending, absl::Status status);

  Decoder& decoder_;
  const SchedulerOptions options_;
  Reclaim reclaim_;
  StepObserver observer_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;  // the scheduler waits for work
  std::condition_variable work_done_;   // callers wait for their work
  std::deque<Pending*> queue_;
  bool closed_ = false;
  absl::flat_hash_set<const KvCache*> last_step_;  // caches whose rows ran in the last step
  double last_step_seconds_ = 0;
  std::atomic<int64_t> last_step_sessions_{0};  // last_step_.size(), read without the mutex
  // Scheduler thread only:
  std::vector<ForwardSegment> segments_;
  int64_t adopted_this_step_ = 0;
  std::thread thread_;
};

}  // namespace tandem

#endif  // TANDEM_WORKERS_BATCH_SCHEDULER_H_
