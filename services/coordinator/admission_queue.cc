#include "services/coordinator/admission_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem {

AdmissionQueue::Ticket& AdmissionQueue::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (queue_ != nullptr) queue_->Release();
    queue_ = other.queue_;
    other.queue_ = nullptr;
  }
  return *this;
}

AdmissionQueue::Ticket::~Ticket() {
  if (queue_ != nullptr) queue_->Release();
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

int AdmissionQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

int AdmissionQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(waiting_.size());
}

void AdmissionQueue::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
  changed_.notify_all();
}

void AdmissionQueue::Leave(uint64_t id) {
  waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  Report();
  changed_.notify_all();  // the one behind may be first now
}

absl::StatusOr<AdmissionQueue::Ticket> AdmissionQueue::Admit(
    absl::Time deadline, const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (waiting_.empty() && running_ < capacity_) {
    ++running_;
    return Ticket(this);
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
  while (!(waiting_.front() == id && running_ < capacity_)) {
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      const size_t ahead = std::find(waiting_.begin(), waiting_.end(), id) - waiting_.begin();
      Leave(id);
      return absl::DeadlineExceededError(
          absl::StrCat("the request's deadline passed after ", absl::FormatDuration(now - start),
                       " in the admission queue (", capacity_, " requests running, ", ahead,
                       " waiting ahead of it)"));
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
  changed_.notify_all();  // the next in line may take another free slot
  return Ticket(this);
}

}  // namespace tandem
