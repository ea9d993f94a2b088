#include "services/coordinator/call_thread.h"

#include <utility>

namespace tandem {

CallThread::~CallThread() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::future<absl::Status> CallThread::Run(std::function<absl::Status()> call) {
  std::packaged_task<absl::Status()> task(std::move(call));
  std::future<absl::Status> done = task.get_future();
  absl::MutexLock lock(&mutex_);
  queue_.push_back(std::move(task));
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  return done;
}

void CallThread::Wait() {
  absl::MutexLock lock(&mutex_);
  mutex_.Await(absl::Condition(this, &CallThread::Idle));
}

void CallThread::Loop() {
  while (true) {
    std::packaged_task<absl::Status()> task;
    {
      absl::MutexLock lock(&mutex_);
      running_ = false;
      mutex_.Await(absl::Condition(this, &CallThread::Woken));
      if (queue_.empty()) return;  // stopping, and every call given has run
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    task();  // makes its future ready
  }
}

}  // namespace tandem
