// Model work in strict FIFO order, one task at a time: RPC threads validate a request, then
// run its model work here. Each caller runs its own work on its own thread when its turn
// comes (a ticket lock), so an uncontended request pays no thread hand-off; the model and
// its thread pool are only ever used by one caller at a time.
//
// Thread-safe: Run may be called from any thread.
#ifndef TANDEM_WORKERS_INFERENCE_QUEUE_H_
#define TANDEM_WORKERS_INFERENCE_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "absl/status/status.h"

namespace tandem {

class InferenceQueue {
 public:
  InferenceQueue() = default;
  ~InferenceQueue();  // refuses new work, waits for queued and running work
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Runs `work` on the calling thread once every earlier caller's work has run, and returns
  // its status, with the seconds it waited for its turn. kUnavailable if the queue is
  // shutting down.
  absl::Status Run(const std::function<absl::Status()>& work, double* queue_seconds = nullptr);

  // Tasks waiting or running now.
  int64_t depth() const;

  // Refuses new work from now on (kUnavailable); queued work still runs.
  void Close();

 private:
  mutable std::mutex mutex_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;  // the next caller's place in line
  uint64_t serving_ = 0;      // the ticket whose work may run now
  bool closed_ = false;
};

}  // namespace tandem

#endif  // TANDEM_WORKERS_INFERENCE_QUEUE_H_
