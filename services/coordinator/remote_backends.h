// The round driver's backends over a session's worker streams (round_backends.h): the one
// place where the rounds meet the wire. They convert core types to and from the worker
// protos, keep the positions each worker's cache holds (SessionWorkers::target_known,
// draft_known: each call sends only what is new), and bound every call by its deadline
// (CallDeadlines). The target fails over: a replica that broke its stream or did not answer
// in time is replaced through `reopen_target` and re-synced from the history.
//
// Thread-safety: one request of one session at a time. WorkerDraft's Prefill, and with
// RoundParams::pipelined its Draft, run on the session's call thread
// (SessionWorkers::draft_calls; the target's prefill or verify goes on meanwhile on the
// caller's); every other call runs on the caller's thread and returns a ready future.
#ifndef TANDEM_SERVICES_COORDINATOR_REMOTE_BACKENDS_H_
#define TANDEM_SERVICES_COORDINATOR_REMOTE_BACKENDS_H_

#include <cstdint>

#include "core/generation/round_backends.h"
#include "services/coordinator/round_params.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

class WorkerTarget : public TargetBackend {
 public:
  // All must outlive the backend.
  WorkerTarget(SessionWorkers& session, const RoundParams& params, const ReopenTarget& reopen,
               const RoundObserver& observer)
      : s_(session), p_(params), reopen_(reopen), observer_(observer) {}

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                    int64_t* reused) override;
  std::future<absl::Status> Verify(const VerifyCall& call, Verdict* out) override;

  // What the worker's cache held of the prompt (SyncResult.reused_tokens); 0 after a
  // failover before the first verify answered (a fresh stream has no cache).
  int32_t cached_prompt_tokens() const { return cached_prompt_tokens_; }

 private:
  absl::Status Sync(absl::Span<const int32_t> sequence, int64_t end, int64_t* reused);
  // The answer of the replica that answered, and its compute seconds.
  absl::StatusOr<v1::VerifyResult> Call(const VerifyCall& call, int32_t continue_tokens,
                                        double* compute_seconds);
  absl::Status Check(const VerifyCall& call, int32_t continue_tokens) const;
  absl::Duration Timeout() const;

  SessionWorkers& s_;
  const RoundParams& p_;
  const ReopenTarget& reopen_;
  const RoundObserver& observer_;
  int32_t cached_prompt_tokens_ = 0;
  bool verified_ = false;    // a verify answered in this request
  v1::VerifyResult result_;  // the last verify's answer (RoundObserver::verified)
};

class WorkerDraft : public DraftBackend {
 public:
  // Drafts on session.draft (not null). All must outlive the backend.
  WorkerDraft(SessionWorkers& session, const RoundParams& params, const RoundObserver& observer)
      : s_(session), p_(params), observer_(observer) {}
  ~WorkerDraft();  // waits for a call still running on the session's call thread
  WorkerDraft(const WorkerDraft&) = delete;
  WorkerDraft& operator=(const WorkerDraft&) = delete;

  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) override;
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override;
  // Closes the draft stream: the session goes on without it.
  void Abandon() override;

 private:
  absl::Status Sync(absl::Span<const int32_t> sequence, int64_t end);
  absl::Status Call(absl::Span<const int32_t> sequence, int32_t k, Proposal* out);
  absl::Duration Timeout(int64_t tokens) const;

  SessionWorkers& s_;
  const RoundParams& p_;
  const RoundObserver& observer_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REMOTE_BACKENDS_H_
