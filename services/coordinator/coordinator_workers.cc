// The Coordinator's use of its worker pools: which draft a session gets, the deadlines of a
// request's worker calls, what a draft call teaches the pool, and failover of a target.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "services/coordinator/coordinator.h"

namespace tandem {
namespace {

bool WorkerDown(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace

bool Coordinator::AttachDraft(const std::string& id, Session& session) {
  if (session.workers.draft != nullptr && !session.workers.draft->dead()) {
    session.workers.draft->Cancel();  // its worker may be frozen: no polite close
  }
  session.workers.draft.reset();
  session.workers.draft_known = 0;
  session.draft_lease.Release();
  // The least-loaded draft that is ready and not backing off; none: the target alone.
  std::optional<size_t> i = drafts_->Pick();
  if (!i.has_value()) return true;
  session.draft_lease = ReplicaLease(drafts_.get(), *i);
  const absl::Time start = absl::Now();
  DraftLatency& latency = drafts_->open_latency(*i);
  absl::StatusOr<std::unique_ptr<WorkerStream>> stream =
      drafts_->client(*i).Attach(id, target_info_.context_size(), latency.Deadline(1));
  DraftDone(*i, latency, absl::Now() - start, 1, stream.status());
  if (!stream.ok()) {
    LOG(WARNING) << "session " << id << ": no draft, target alone: " << stream.status();
    if (WorkerDown(stream.status())) metrics_->draft_failures.Increment();
    session.draft_lease.Release();
    // A draft that cannot take the session just means no speculation for it.
    return !WorkerDown(stream.status());
  }
  session.workers.draft = *std::move(stream);
  return true;
}

void Coordinator::DraftDone(size_t replica, DraftLatency& latency, absl::Duration seconds,
                            int64_t tokens, const absl::Status& status) {
  if (status.ok()) {
    // Late but answered: a busy draft (batching many sessions), not a failed one. Its time
    // raises its own bounds; whether its guesses still pay is the cost model's to say.
    const bool slow = seconds > latency.SlowAfter(tokens);
    metrics_->DraftCalls(slow ? "slow" : "ok").Increment();
    latency.Observe(seconds, tokens);
    drafts_->backoff(replica).Succeed();
    return;
  }
  metrics_->DraftCalls("failed").Increment();
  if (!WorkerDown(status)) return;  // a refused request (e.g. a full draft) says nothing
  // No answer within the liveness bound counts as a sample of it: a draft that really became
  // slower raises its own deadline instead of being cut off for good.
  if (status.code() == absl::StatusCode::kDeadlineExceeded) latency.Observe(seconds, tokens);
  const absl::Time retry = drafts_->backoff(replica).Fail(absl::Now());
  drafts_->MarkDown(replica);
  LOG(WARNING) << "draft " << drafts_->client(replica).address() << " failed (" << status
               << "); not used again for " << absl::FormatDuration(retry - absl::Now())
               << " and until its health probe answers";
}

bool Coordinator::NeedsDraft(const Session& session) const {
  const WorkerStream* draft = session.workers.draft.get();
  // A draft another session found down is not waited for again by this one.
  return draft == nullptr || draft->dead() ||
         (session.draft_lease.held() && !drafts_->Usable(session.draft_lease.index()));
}

void Coordinator::CancelIfTargetDown(Session& session) {
  // Its first call then fails at once and fails over, instead of waiting for its deadline.
  if (session.workers.target != nullptr && session.target_lease.held() &&
      !targets_->Ready(session.target_lease.index())) {
    session.workers.target->Cancel();
  }
}

CallDeadlines Coordinator::Deadlines(const Session& session, absl::Time request_deadline) {
  CallDeadlines d;
  d.target = options_.target_timeout;
  d.request = request_deadline;
  if (session.draft_lease.held()) {
    const size_t draft = session.draft_lease.index();
    d.draft = [this, draft](int64_t tokens) { return drafts_->latency(draft).Deadline(tokens); };
    d.draft_done = [this, draft](absl::Duration seconds, int64_t tokens,
                                 const absl::Status& status) {
      DraftDone(draft, drafts_->latency(draft), seconds, tokens, status);
    };
  }
  return d;
}

absl::StatusOr<std::unique_ptr<WorkerStream>> Coordinator::Reopen(const std::string& id,
                                                                  Session& session,
                                                                  const absl::Status& failure,
                                                                  absl::Time request_deadline,
                                                                  int failover) {
  if (absl::Now() >= request_deadline) {  // the request's own time is up, not the worker's
    return absl::DeadlineExceededError(
        absl::StrCat("the request's deadline passed after: ", failure.message()));
  }
  // A replica that does not answer in time is taken out of choice; one whose stream broke
  // (killed, restarted, or it closed an idle stream) is for the next Attach to find out.
  if (failure.code() == absl::StatusCode::kDeadlineExceeded && session.target_lease.held()) {
    targets_->MarkDown(session.target_lease.index());
  }
  session.target_lease.Release();
  // Each replica twice at most: a worker that fails every call cannot hold a request forever.
  if (failover > 2 * static_cast<int>(targets_->size()) + 2) {
    return absl::UnavailableError(absl::StrCat("target failed ", failover,
                                               " times in one request; last: ", failure.message()));
  }
  const absl::Time give_up = std::min(request_deadline, absl::Now() + options_.failover_wait);
  absl::StatusOr<std::unique_ptr<WorkerStream>> stream = targets_->AttachReady(
      id, target_info_.context_size(), give_up, options_.target_timeout, &session.target_lease);
  LOG(WARNING) << "session " << id << ": target failed (" << failure << "); failover "
               << (stream.ok() ? "to " + targets_->client(session.target_lease.index()).address()
                               : "failed: " + stream.status().ToString());
  if (!stream.ok()) {
    return absl::UnavailableError(
        absl::StrCat("target failed (", failure.message(),
                     ") and no replica took the session over: ", stream.status().message()));
  }
  return stream;
}

}  // namespace tandem
