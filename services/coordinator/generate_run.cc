#include "services/coordinator/generate_run.h"

#include <utility>

namespace tandem {

GenerateRun::GenerateRun(std::function<absl::Status(const Write&, const Cancelled&)> generate)
    : thread_([this, generate = std::move(generate)] {
        const absl::Status status = generate(
            [this](const v1::GenerateResponse& message) {
              if (cancelled_) return false;
              absl::MutexLock lock(&mutex_);
              messages_.push_back(message);
              return true;
            },
            [this] { return cancelled_.load(); });
        absl::MutexLock lock(&mutex_);
        status_ = status;
        ended_ = true;
      }) {}

GenerateRun::~GenerateRun() {
  Cancel();
  thread_.join();
}

bool GenerateRun::Wait(absl::Duration timeout, std::vector<v1::GenerateResponse>* out) {
  absl::MutexLock lock(&mutex_);
  auto ready = [this]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return ended_ || !messages_.empty(); };
  mutex_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  for (v1::GenerateResponse& m : messages_) out->push_back(std::move(m));
  messages_.clear();
  return ended_;
}

absl::Status GenerateRun::status() const {
  absl::MutexLock lock(&mutex_);
  return status_;
}

}  // namespace tandem
