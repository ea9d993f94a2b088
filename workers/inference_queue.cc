#include "workers/inference_queue.h"

#include <chrono>

namespace tandem {

struct InferenceQueue::Task {
  const std::function<absl::Status()>* work;
  std::chrono::steady_clock::time_point enqueued;
  double queue_seconds = 0;
  absl::Status status;
  bool done = false;
  std::condition_variable finished;
};

InferenceQueue::InferenceQueue() : thread_([this] { Loop(); }) {}

InferenceQueue::~InferenceQueue() {
  Close();
  thread_.join();
}

void InferenceQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

int64_t InferenceQueue::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(tasks_.size()) + running_;
}

absl::Status InferenceQueue::Run(const std::function<absl::Status()>& work, double* queue_seconds) {
  Task task;
  task.work = &work;
  task.enqueued = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return absl::UnavailableError("the worker is shutting down");
  tasks_.push_back(&task);
  ready_.notify_all();
  task.finished.wait(lock, [&] { return task.done; });
  if (queue_seconds != nullptr) *queue_seconds = task.queue_seconds;
  return task.status;
}

void InferenceQueue::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ready_.wait(lock, [&] { return closed_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // closed and drained
    Task* task = tasks_.front();
    tasks_.pop_front();
    ++running_;
    lock.unlock();
    task->queue_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - task->enqueued).count();
    absl::Status status = (*task->work)();
    lock.lock();
    --running_;
    task->status = std::move(status);
    task->done = true;
    task->finished.notify_all();
  }
}

}  // namespace tandem
