// One Coordinator::Generate call on a thread of its own, read from another thread: the HTTP
// handler waits for the first message (so that a request refused before any output gets its
// own HTTP status), then streams the rest while the rounds go on. Cancel() makes the call's
// `cancelled` poll true and its writes fail, so the rounds stop and the session's caches are
// freed on both workers, as when a gRPC client cancels.
//
// Thread-safe: Wait and Cancel may be called from any thread; the destructor cancels and
// joins.
#ifndef TANDEM_SERVICES_COORDINATOR_GENERATE_RUN_H_
#define TANDEM_SERVICES_COORDINATOR_GENERATE_RUN_H_

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

class GenerateRun {
 public:
  using Write = std::function<bool(const v1::GenerateResponse&)>;
  using Cancelled = std::function<bool()>;
  // Runs `generate(write, cancelled)` (a Coordinator::Generate) on a new thread.
  explicit GenerateRun(std::function<absl::Status(const Write&, const Cancelled&)> generate);
  ~GenerateRun();
  GenerateRun(const GenerateRun&) = delete;
  GenerateRun& operator=(const GenerateRun&) = delete;

  // Waits up to `timeout` for messages or the end of the call; appends the messages written
  // since the last Wait to `out`. True once the call has ended and all its messages were
  // taken: status() is then its result.
  bool Wait(absl::Duration timeout, std::vector<v1::GenerateResponse>* out);
  absl::Status status() const;
  void Cancel() { cancelled_ = true; }

 private:
  std::atomic<bool> cancelled_{false};
  mutable absl::Mutex mutex_;
  std::vector<v1::GenerateResponse> messages_ ABSL_GUARDED_BY(mutex_);
  bool ended_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mutex_);
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_GENERATE_RUN_H_
