#include "services/coordinator/admission_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem {

AdmissionQueue::Ticket& AdmissionQueue::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (queue_ != nullptr) queue_->Release(blocks_);
    queue_ = other.queue_;
    blocks_ = other.blocks_;
    other.queue_ = nullptr;
  }
  return *this;
}

AdmissionQueue::Ticket::~Ticket() {
  if (queue_ != nullptr) queue_->Release(blocks_);
}

AdmissionQueue::AdmissionQueue(int capacity, int max_waiting,
                               std::function<void(int waiting)> on_waiting)
    : capacity_(std::max(capacity, 1)),
      max_waiting_(std::max(max_waiting, 0)),
      on_waiting_(std::move(on_waiting)) {}

void AdmissionQueue::Report() const {
  if (on_waiting_) on_waiting_(static_cast<int>(waiting_.size()));
}

int AdmissionQueue::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_;
}

void AdmissionQueue::SetCapacity(int capacity) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = std::max(capacity, 1);
  }
  changed_.notify_all();  // those in line may start now
}

void AdmissionQueue::SetKvCapacity(const KvBlockDemand& blocks) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kv_capacity_ = blocks;
  }
  changed_.notify_all();
}

KvBlockDemand AdmissionQueue::reserved_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

bool AdmissionQueue::FitsLocked(const KvBlockDemand& blocks) const {
  if (kv_capacity_.global <= 0) return true;
  return reserved_.global + blocks.global <= kv_capacity_.global &&
         reserved_.sliding + blocks.sliding <= kv_capacity_.sliding;
}

absl::Status AdmissionQueue::CheckFitsAtAllLocked(const KvBlockDemand& blocks) const {
  if (kv_capacity_.global <= 0 ||
      (blocks.global <= kv_capacity_.global && blocks.sliding <= kv_capacity_.sliding)) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("the request needs ", blocks.global, " KV blocks (", blocks.sliding,
                   " sliding) but the target workers' KV budget (--kv-budget-mb) holds ",
                   kv_capacity_.global, " (", kv_capacity_.sliding, " sliding)"));
}

int AdmissionQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

int AdmissionQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(waiting_.size());
}

void AdmissionQueue::Release(const KvBlockDemand& blocks) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    reserved_.global -= blocks.global;
    reserved_.sliding -= blocks.sliding;
  }
  changed_.notify_all();
}

void AdmissionQueue::Leave(uint64_t id) {
  waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  Report();
  changed_.notify_all();  // the one behind may be first now
}

absl::StatusOr<AdmissionQueue::Ticket> AdmissionQueue::Admit(absl::Time deadline,
                                                             const std::function<bool()>& cancelled,
                                                             const KvBlockDemand& blocks) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (absl::Status fits = CheckFitsAtAllLocked(blocks); !fits.ok()) return fits;
  if (waiting_.empty() && running_ < capacity_ && FitsLocked(blocks)) {
    ++running_;
    reserved_ += blocks;
    return Ticket(this, blocks);
  }
  if (static_cast<int>(waiting_.size()) >= max_waiting_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordinator runs its maximum of ", capacity_, " concurrent requests (the target ",
        "workers' sessions) and its queue holds its maximum of ", max_waiting_,
        " waiting ones (--max-queued-requests); try again later"));
  }
  const uint64_t id = next_id_++;
  waiting_.push_back(id);
  Report();
  const absl::Time start = absl::Now();
  constexpr auto kPoll = std::chrono::milliseconds(20);
  while (!(waiting_.front() == id && running_ < capacity_ && FitsLocked(blocks))) {
    const absl::Time now = absl::Now();
    if (absl::Status fits = CheckFitsAtAllLocked(blocks); !fits.ok()) {  // capacity shrank
      Leave(id);
      return fits;
    }
    if (now >= deadline) {
      const size_t ahead = std::find(waiting_.begin(), waiting_.end(), id) - waiting_.begin();
      Leave(id);
      return absl::DeadlineExceededError(
          absl::StrCat("the request's deadline passed after ", absl::FormatDuration(now - start),
                       " in the admission queue (", running_, " requests running",
                       kv_capacity_.global > 0 ? absl::StrCat(" holding ", reserved_.global, " of ",
                                                              kv_capacity_.global, " KV blocks")
                                               : "",
                       ", ", ahead, " waiting ahead of it)"));
    }
    if (cancelled && cancelled()) {
      Leave(id);
      return absl::CancelledError("the client went away while the request was queued");
    }
    const auto wait = std::min<std::chrono::steady_clock::duration>(
        kPoll, absl::ToChronoNanoseconds(deadline - now));
    changed_.wait_for(lock, wait);
  }
  waiting_.pop_front();
  Report();
  ++running_;
  reserved_ += blocks;
  changed_.notify_all();  // the next in line may take another free slot
  return Ticket(this, blocks);
}

}  // namespace tandem
