#include "workers/inference_queue.h"

#include <chrono>

namespace tandem {

InferenceQueue::~InferenceQueue() {
  Close();
  std::unique_lock<std::mutex> lock(mutex_);
  turn_.wait(lock, [&] { return serving_ == next_ticket_; });
}

void InferenceQueue::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
}

int64_t InferenceQueue::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(next_ticket_ - serving_);
}

absl::Status InferenceQueue::Run(const std::function<absl::Status()>& work, double* queue_seconds) {
  const auto enqueued = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return absl::UnavailableError("the worker is shutting down");
  const uint64_t ticket = next_ticket_++;
  turn_.wait(lock, [&] { return serving_ == ticket; });
  lock.unlock();
  if (queue_seconds != nullptr) {
    *queue_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - enqueued).count();
  }
  absl::Status status = work();
  lock.lock();
  ++serving_;
  lock.unlock();
  turn_.notify_all();
  return status;
}

}  // namespace tandem
