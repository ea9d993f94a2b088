// One inference thread fed by a FIFO queue: RPC threads validate a request, enqueue the
// model work and wait for it; the model (and its thread pool) is only ever used from here.
//
// Thread-safe: Run may be called from any thread.
#ifndef TANDEM_WORKERS_INFERENCE_QUEUE_H_
#define TANDEM_WORKERS_INFERENCE_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/status/status.h"

namespace tandem {

class InferenceQueue {
 public:
  InferenceQueue();
  ~InferenceQueue();  // finishes queued work, then joins
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Runs `work` on the inference thread and returns its status once it has run, with the
  // seconds it waited in the queue. kUnavailable if the queue is shutting down.
  absl::Status Run(const std::function<absl::Status()>& work, double* queue_seconds = nullptr);

  // Tasks waiting or running now.
  int64_t depth() const;

  // Refuses new work from now on (kUnavailable); queued work still runs.
  void Close();

 private:
  struct Task;
  void Loop();

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task*> tasks_;
  int64_t running_ = 0;
  bool closed_ = false;
  std::thread thread_;
};

}  // namespace tandem

#endif  // TANDEM_WORKERS_INFERENCE_QUEUE_H_
