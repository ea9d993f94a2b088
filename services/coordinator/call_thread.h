// One thread of a session's own for its worker calls that run beside the caller's
// (remote_backends.h: the draft's prefill while the target's goes on, a pipelined draft while
// the target verifies), so no thread is started per call. Calls run one after another, in
// the order given; the thread starts with the first call and lives as long as the session.
//
//   std::future<absl::Status> done = thread.Run([&] { return Sync(...); });
//   ... the caller's own call ...
//   absl::Status status = done.get();
//
// Thread-safe. The destructor runs the calls already given, then joins the thread.
#ifndef TANDEM_SERVICES_COORDINATOR_CALL_THREAD_H_
#define TANDEM_SERVICES_COORDINATOR_CALL_THREAD_H_

#include <deque>
#include <functional>
#include <future>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace tandem {

class CallThread {
 public:
  CallThread() = default;
  ~CallThread();
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  // Queues `call`; the future becomes ready with its status once it has run.
  std::future<absl::Status> Run(std::function<absl::Status()> call);
  // Waits until every call given so far has run.
  void Wait();

 private:
  void Loop();
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return queue_.empty() && !running_; }
  bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return stopping_ || !queue_.empty(); }

  absl::Mutex mutex_;
  std::deque<std::packaged_task<absl::Status()>> queue_ ABSL_GUARDED_BY(mutex_);
  bool running_ ABSL_GUARDED_BY(mutex_) = false;  // a call is out of the queue, running
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // started by the first Run (under mutex_)
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_CALL_THREAD_H_
