// How long the coordinator waits for a draft worker, and when it tries a failed one again.
//
// A draft's calls are judged against its own recent speed under the current load:
// DraftLatency keeps the seconds per position of the draft's last `window` calls, and for a
// call of n positions gives two bounds:
//   SlowAfter(n) = clamp(multiple × p(percentile) × n, floor, ceiling)
//     a call that answers later than this is *slow*: its answer is used and its time
//     observed (so the bounds rise with the load), but the draft is not dropped;
//   Deadline(n) = clamp(max(liveness_multiple × p(percentile) × n, liveness_floor, floor),
//                       ceiling)
//     a call not answered by then is *failed*: the stream is cancelled, and the coordinator
//     marks the draft down and backs off (a frozen or partitioned draft is dropped within
//     this one bound). An error from the worker fails the call at once.
// Until min_samples calls are known both are cold_deadline. A call that misses its deadline
// still counts as a sample of it, so a draft that really became slower raises its own
// deadline after a few failures instead of being cut off forever.
//
// Backoff spaces out the retries of a failed draft: after the f-th failure in a row it is
// left alone for min(initial × factor^(f-1), max); a success resets it. There is one back-off
// per draft, not per session: failures reported while a pause runs (the other sessions' calls
// that were in flight) do not lengthen it. A health probe that finds the draft answering again
// after its probes had failed (a frozen or restarted process is back) ends the pause at once;
// a draft whose probes kept answering while its calls failed serves its whole pause.
//
// Both are thread-safe (one instance per draft replica, shared by its sessions).
#ifndef TANDEM_SERVICES_COORDINATOR_DRAFT_DEADLINE_H_
#define TANDEM_SERVICES_COORDINATOR_DRAFT_DEADLINE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tandem {

struct DraftDeadlineOptions {
  absl::Duration floor = absl::Milliseconds(50);  // of both bounds
  double multiple = 4;  // of the recent high percentile: beyond it a call is slow
  // A call unanswered past max(liveness_multiple × the percentile, liveness_floor) has failed.
  double liveness_multiple = 16;
  absl::Duration liveness_floor = absl::Seconds(1);
  double percentile = 0.95;  // in (0, 1]
  int window = 64;           // recent calls kept
  int min_samples = 4;       // below this, cold_deadline applies
  absl::Duration cold_deadline = absl::Seconds(2);
  absl::Duration ceiling = absl::Seconds(10);
};
// kInvalidArgument naming the option when `options` cannot work.
absl::Status ValidateDraftDeadlineOptions(const DraftDeadlineOptions& options);

class DraftLatency {
 public:
  explicit DraftLatency(const DraftDeadlineOptions& options) : options_(options) {}

  // Records a call that ran `tokens` (>= 1) positions in `seconds`.
  void Observe(absl::Duration seconds, int64_t tokens);
  // A call of `tokens` positions answered later than this was slow (not failed).
  absl::Duration SlowAfter(int64_t tokens) const;
  // The deadline of a call that runs `tokens` positions: unanswered by then, it failed.
  absl::Duration Deadline(int64_t tokens) const;
  // The recent `percentile` of seconds per token; zero with no samples.
  absl::Duration PerTokenPercentile() const;

 private:
  absl::Duration PercentileLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // `multiple` × the percentile × tokens, or nullopt while the draft is cold.
  std::optional<absl::Duration> ScaledLocked(double multiple, int64_t tokens) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const DraftDeadlineOptions options_;
  mutable absl::Mutex mutex_;
  std::vector<absl::Duration> samples_ ABSL_GUARDED_BY(mutex_);  // ring of per-token times
  size_t next_ ABSL_GUARDED_BY(mutex_) = 0;
};

struct BackoffOptions {
  absl::Duration initial = absl::Seconds(1);
  double factor = 2;
  absl::Duration max = absl::Seconds(60);
};

class Backoff {
 public:
  explicit Backoff(const BackoffOptions& options) : options_(options) {}

  // A failure at `now`: no retry before the returned time. During a pause, the pause stands.
  absl::Time Fail(absl::Time now);
  void Succeed();
  // The draft answered its health probe after being down: a retry is allowed now.
  void Reprobed();
  // True when a retry is allowed at `now`.
  bool Allowed(absl::Time now) const;
  int failures() const;

 private:
  const BackoffOptions options_;
  mutable absl::Mutex mutex_;
  int failures_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Time retry_at_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_DRAFT_DEADLINE_H_
