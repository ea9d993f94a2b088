#include "workers/batch_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Logits rows a chunk of `rows` rows of a work of `n` rows yields, ending at `end`.
int64_t LogitRows(LogitsMode mode, int64_t rows, int64_t end, int64_t n) {
  if (mode == LogitsMode::kAll) return rows;
  return mode == LogitsMode::kLast && end == n ? 1 : 0;
}

}  // namespace

BatchScheduler::BatchScheduler(Decoder& decoder, const SchedulerOptions& options, Reclaim reclaim,
                               StepObserver observer)
    : decoder_(decoder),
      options_(options),
      reclaim_(std::move(reclaim)),
      observer_(std::move(observer)),
      thread_([this] { Loop(); }) {}

BatchScheduler::~BatchScheduler() {
  Close();
  thread_.join();
}

void BatchScheduler::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  work_ready_.notify_all();
}

int64_t BatchScheduler::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

absl::Status BatchScheduler::Run(Work& work) {
  // Checked here, alone, so that a bad request never fails the step it would share.
  if (work.cache == nullptr || work.logits == nullptr) {
    return absl::InvalidArgumentError("scheduler: work without a cache or a logits buffer");
  }
  const absl::Status check =
      decoder_.CheckSegment({work.cache, work.tokens, work.start, work.mode});
  if (!check.ok()) return check;
  const int64_t n = static_cast<int64_t>(work.tokens.size());
  const int64_t vocab = decoder_.model().config().vocab_size;
  work.logits->resize(LogitRows(work.mode, n, n, n) * vocab);
  if (work.hidden != nullptr) work.hidden->resize(n * decoder_.model().config().dim);
  work.adopted = 0;
  Pending pending;
  pending.work = &work;
  pending.enqueued = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return absl::UnavailableError("the worker is shutting down");
  queue_.push_back(&pending);
  work_ready_.notify_all();
  work_done_.wait(lock, [&] { return pending.finished; });
  return pending.status;
}

void BatchScheduler::Finish(Pending& pending, absl::Status status) {
  pending.status = std::move(status);
  pending.finished = true;
  queue_.erase(std::find(queue_.begin(), queue_.end(), &pending));
}

void BatchScheduler::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<Chunk> chunks;
  while (true) {
    work_ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (closed_) break;
    Gather(lock);
    if (closed_) break;
    chunks.clear();
    Select(&chunks);
    if (chunks.empty()) {
      // Nothing can get memory and nothing runs that could free any: the oldest gives up.
      Pending& oldest = *queue_.front();
      Finish(oldest, absl::ResourceExhaustedError(absl::StrCat(
                         "KV memory: ", oldest.work->tokens.size() - oldest.done,
                         " more positions of this session do not fit in the worker's KV budget "
                         "(--kv-budget-mb) beside the sessions with requests in flight")));
      work_done_.notify_all();
      continue;
    }
    lock.unlock();
    RunStep(chunks);
    lock.lock();
    work_done_.notify_all();
  }
  while (!queue_.empty())
    Finish(*queue_.front(), absl::UnavailableError("the worker is shutting down"));
  work_done_.notify_all();
}

void BatchScheduler::Gather(std::unique_lock<std::mutex>& lock) {
  if (last_step_.empty()) return;
  const double window = std::min(options_.gather_seconds, 0.5 * last_step_seconds_);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(window));
  while (!closed_) {
    int64_t back = 0, rows = 0;
    for (const Pending* pending : queue_) {
      back += last_step_.contains(pending->work->cache) ? 1 : 0;
      rows += static_cast<int64_t>(pending->work->tokens.size()) - pending->done;
    }
    if (back >= static_cast<int64_t>(last_step_.size()) || rows >= options_.max_batch_tokens) {
      return;
    }
    if (work_ready_.wait_until(lock, deadline) == std::cv_status::timeout) return;
  }
}

bool BatchScheduler::HasMemory(const Chunk& chunk, KvBlockDemand* blocks_taken) {
  const Work& work = *chunk.pending->work;
  // The rows overwrite the cache from here on: what lies past it is no longer needed.
  work.cache->Truncate(work.start + chunk.pending->done);
  const KvBlockDemand needed = work.cache->Demand(work.start + chunk.pending->done + chunk.rows);
  if (needed.total() == 0) return true;
  KvBlockDemand total = *blocks_taken;
  total += needed;
  if (reclaim_ != nullptr && !reclaim_(total)) return false;
  *blocks_taken = total;
  return true;
}

const std::vector<int32_t>& BatchScheduler::Prefix(Pending& pending) {
  const Work& work = *pending.work;
  if (pending.prefix.empty()) {
    pending.prefix.assign(work.history->begin(), work.history->begin() + work.start);
    pending.prefix.insert(pending.prefix.end(), work.tokens.begin(), work.tokens.end());
  }
  return pending.prefix;
}

bool BatchScheduler::SharePrefix(Pending& pending, absl::flat_hash_set<uint64_t>* computing) {
  Work& work = *pending.work;
  const int64_t n = static_cast<int64_t>(work.tokens.size());
  const int64_t position = work.start + pending.done;
  // Only rows whose logits are not wanted can be adopted; blocks start at multiples of 16.
  if (work.history == nullptr || work.mode == LogitsMode::kAll || position % kKeyBlock != 0 ||
      n - pending.done <= kKeyBlock || static_cast<int64_t>(work.history->size()) < work.start) {
    return true;
  }
  const std::vector<int32_t>& prefix = Prefix(pending);
  work.cache->Truncate(position);
  const int64_t adopted = work.cache->AdoptCachedPrefix(prefix);
  pending.done += adopted;
  work.adopted += adopted;
  adopted_this_step_ += adopted;
  const int64_t next = work.start + pending.done;
  if (next % kKeyBlock != 0 || next + kKeyBlock > static_cast<int64_t>(prefix.size())) return true;
  return computing->insert(work.cache->BlockHashAt(prefix, next)).second;
}

void BatchScheduler::Select(std::vector<Chunk>* chunks) {
  int64_t budget = std::clamp<int64_t>(options_.max_batch_tokens, 1, Decoder::kMaxChunk);
  KvBlockDemand blocks_taken;
  absl::flat_hash_set<uint64_t> computing;  // first blocks this step's prefill chunks compute
  // Decode and verify work first, whole; then prefill chunks into what is left.
  for (bool small : {true, false}) {
    for (Pending* pending : queue_) {
      if (budget == 0) return;
      const int64_t left = static_cast<int64_t>(pending->work->tokens.size()) - pending->done;
      if ((left <= kSmallWork) != small) continue;
      if (!SharePrefix(*pending, &computing)) continue;
      // Adoption may have covered some rows: what is left now.
      const int64_t rest = static_cast<int64_t>(pending->work->tokens.size()) - pending->done;
      const Chunk chunk{pending, std::min(rest, budget)};
      if (!HasMemory(chunk, &blocks_taken)) continue;
      chunks->push_back(chunk);
      budget -= chunk.rows;
    }
  }
}

const float* BatchScheduler::Deliver(const Chunk& chunk, const ForwardSegment& segment,
                                     const float* rows) const {
  const Work& work = *chunk.pending->work;
  const int64_t vocab = decoder_.model().config().vocab_size;
  const int64_t n = static_cast<int64_t>(work.tokens.size());
  const int64_t count = LogitRows(segment.logits, chunk.rows, chunk.pending->done + chunk.rows, n);
  if (count == 0) return rows;
  // A verify's rows land at their place in the work; a last row at the start.
  float* out =
      work.logits->data() + (work.mode == LogitsMode::kAll ? chunk.pending->done : 0) * vocab;
  if (count > 0) std::memcpy(out, rows, count * vocab * sizeof(float));
  return rows + count * vocab;
}

void BatchScheduler::RunStep(std::vector<Chunk>& chunks) {
  segments_.clear();
  StepStats stats;
  const auto begin = Clock::now();
  for (const Chunk& chunk : chunks) {
    const Work& work = *chunk.pending->work;
    const int64_t n = static_cast<int64_t>(work.tokens.size());
    const int64_t end = chunk.pending->done + chunk.rows;
    const LogitsMode mode = work.mode == LogitsMode::kAll                ? LogitsMode::kAll
                            : LogitsMode::kLast == work.mode && end == n ? LogitsMode::kLast
                                                                         : LogitsMode::kNone;
    float* hidden =
        work.hidden == nullptr
            ? nullptr
            : work.hidden->data() + chunk.pending->done * decoder_.model().config().dim;
    segments_.push_back({work.cache, work.tokens.subspan(chunk.pending->done, chunk.rows),
                         work.start + chunk.pending->done, mode, hidden});
    (mode == LogitsMode::kAll                       ? stats.verify_rows
     : mode == LogitsMode::kLast && chunk.rows == 1 ? stats.decode_rows
                                                    : stats.prefill_rows) += chunk.rows;
  }
  stats.sessions = static_cast<int64_t>(chunks.size());
  absl::StatusOr<absl::Span<const float>> logits = decoder_.ForwardBatch(segments_);
  std::vector<absl::Status> statuses(chunks.size(), logits.status());
  if (logits.ok()) {
    const float* rows = logits->data();
    for (size_t c = 0; c < chunks.size(); ++c) rows = Deliver(chunks[c], segments_[c], rows);
  } else if (chunks.size() > 1) {
    // One segment's failure (its cache could not get memory) must not fail the others: run
    // each alone. Their logits are the same either way (batch invariance).
    for (size_t c = 0; c < chunks.size(); ++c) {
      absl::StatusOr<absl::Span<const float>> alone =
          decoder_.ForwardBatch(absl::MakeConstSpan(&segments_[c], 1));
      statuses[c] = alone.status();
      if (alone.ok()) Deliver(chunks[c], segments_[c], alone->data());
    }
  }
  stats.seconds = SecondsBetween(begin, Clock::now());
  // The sessions' threads now sample, answer and send the next requests: leave them the cores.
  decoder_.pool().Rest();
  // Publish the full blocks the step wrote, for other sessions' prefixes.
  for (size_t c = 0; c < chunks.size(); ++c) {
    Pending& pending = *chunks[c].pending;
    const int64_t end = pending.work->start + pending.done + chunks[c].rows;
    if (!statuses[c].ok() || pending.work->history == nullptr ||
        static_cast<int64_t>(pending.work->history->size()) < pending.work->start ||
        end / kKeyBlock == (end - chunks[c].rows) / kKeyBlock) {
      continue;  // no block was completed
    }
    pending.work->cache->PublishFullBlocks(Prefix(pending));
  }
  stats.adopted_rows = adopted_this_step_;
  adopted_this_step_ = 0;
  if (observer_ != nullptr) observer_(stats);
  std::lock_guard<std::mutex> lock(mutex_);
  last_step_.clear();
  last_step_seconds_ = stats.seconds;
  for (size_t c = 0; c < chunks.size(); ++c) {
    Pending& pending = *chunks[c].pending;
    if (!pending.started) {
      pending.started = true;
      pending.work->queue_seconds = SecondsBetween(pending.enqueued, begin);
    }
    last_step_.insert(pending.work->cache);
    pending.done += chunks[c].rows;
    if (!statuses[c].ok()) {
      Finish(pending, statuses[c]);
    } else if (pending.done == static_cast<int64_t>(pending.work->tokens.size())) {
      Finish(pending, absl::OkStatus());
    }
  }
  last_step_sessions_.store(static_cast<int64_t>(last_step_.size()), std::memory_order_relaxed);
}

}  // namespace tandem
