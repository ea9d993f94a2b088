// Per-message deadlines on gRPC sync streams. A sync stream's Read has no deadline of its own
// (a ClientContext deadline would end the whole stream), so a caller arms the timer before a
// Write/Read pair and disarms it after: if the deadline passes first, the timer cancels the
// call's context (TryCancel), the pending Read returns false and the caller learns from
// Disarm that it was the timer.
//
//   CallTimer::Ticket t = timer.Arm(context, absl::Now() + timeout);
//   bool ok = stream->Write(request) && stream->Read(&response);
//   if (timer.Disarm(t)) { ... deadline exceeded: the stream is cancelled ... }
//
// One thread per timer sleeps until the earliest armed deadline. Once Disarm returns, the
// timer never touches that context again, so the context may be destroyed.
//
// Thread-safe.
#ifndef TANDEM_SERVICES_COORDINATOR_CALL_TIMER_H_
#define TANDEM_SERVICES_COORDINATOR_CALL_TIMER_H_

#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"

namespace tandem {

class CallTimer {
 public:
  struct Ticket {
    absl::Time deadline;
    uint64_t id = 0;
  };

  CallTimer();
  ~CallTimer();  // stops the thread; armed contexts are left alone
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  // Cancels `context` at `deadline` unless disarmed first. An infinite deadline never fires.
  Ticket Arm(grpc::ClientContext* context, absl::Time deadline);
  // Disarms `ticket`; true when its deadline had already fired (the context was cancelled).
  bool Disarm(Ticket ticket);

 private:
  void Run();
  bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stopping_ || generation_ != seen_generation_;
  }

  absl::Mutex mutex_;
  // (deadline, ticket) -> context, earliest first.
  std::map<std::pair<absl::Time, uint64_t>, grpc::ClientContext*> armed_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_set<uint64_t> fired_ ABSL_GUARDED_BY(mutex_);  // fired, not yet disarmed
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = 1;
  // Bumped when a new earliest deadline is armed, so the sleeping thread re-reads it.
  uint64_t generation_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t seen_generation_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_CALL_TIMER_H_
