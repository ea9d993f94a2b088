#include "services/coordinator/worker_constraint.h"

#include <algorithm>
#include <future>
#include <memory>
#include <utility>

#include "core/base/status_macros.h"
#include "glog/logging.h"
#include "wire/proto_convert.h"

namespace tandem {
namespace {

// A target that broke its stream or did not answer in time: another replica may.
bool NeedsFailover(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

absl::Duration TargetTimeout(const RoundParams& params) {
  const absl::Duration left = params.deadlines.request - absl::Now();
  return std::max(absl::Milliseconds(1), std::min(params.deadlines.target, left));
}

}  // namespace

absl::Status ConstrainStream(WorkerStream& stream, const RoundParams& params,
                             absl::Duration timeout) {
  v1::SessionRequest request;
  v1::ConstrainRequest* constrain = request.mutable_constrain();
  ConstraintToProto(params.constraint, constrain->mutable_constraint());
  constrain->set_start_position(static_cast<int32_t>(params.constraint_start));
  constrain->mutable_end_ids()->Assign(params.stop_ids.begin(), params.stop_ids.end());
  return stream.Call(std::move(request), timeout).status();
}

absl::Status ConstrainWorkers(SessionWorkers& session, const RoundParams& params,
                              const ReopenTarget& reopen) {
  const bool constrained = !params.constraint.empty();
  // The draft's on the session's call thread, beside the target's.
  std::future<absl::Status> draft;
  if (session.draft != nullptr && (constrained || session.draft_constrained)) {
    draft = session.draft_calls.Run([&session, &params] {
      return ConstrainStream(*session.draft, params, params.deadlines.draft_fallback);
    });
  }
  absl::Status target = absl::OkStatus();
  if (constrained || session.target_constrained) {
    target = ConstrainStream(*session.target, params, TargetTimeout(params));
    while (NeedsFailover(target) && reopen) {
      ASSIGN_OR_RETURN(session.target, reopen(target));  // constrained as it is reopened
      session.target_known = 0;
      target = absl::OkStatus();
    }
    session.target_constrained = constrained;
  }
  if (draft.valid()) {
    const absl::Status drafted = draft.get();
    session.draft_constrained = constrained;
    if (!drafted.ok()) {
      // The draft only proposes: the request goes on without it.
      LOG(WARNING) << "draft dropped: it did not take the request's constraint: " << drafted;
      session.draft.reset();
      session.draft_known = 0;
      session.draft_constrained = false;
    }
  }
  return target;
}

ReopenTarget ConstrainingReopen(const ReopenTarget& reopen, const RoundParams& params) {
  if (!reopen) return reopen;
  return [&reopen,
          &params](const absl::Status& failure) -> absl::StatusOr<std::unique_ptr<WorkerStream>> {
    absl::Status last = failure;
    while (true) {
      ASSIGN_OR_RETURN(std::unique_ptr<WorkerStream> stream, reopen(last));
      if (params.constraint.empty()) return stream;  // a new stream holds none
      last = ConstrainStream(*stream, params, TargetTimeout(params));
      if (last.ok()) return stream;
      if (!NeedsFailover(last)) return last;
    }
  };
}

}  // namespace tandem
