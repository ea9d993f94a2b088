// A request's output constraint (RoundParams::constraint) on its session's worker streams: a
// ConstrainRequest sent once per request to the target and the draft, before their first
// draft or verify, and again on every target stream that replaces a failed one (a new stream
// holds no constraint); a request without a constraint clears the one an earlier request of
// the session left on a stream. The workers rebuild the constraint's state from their caches'
// tokens, so a re-sync or a rollback needs nothing more.
//
// Not thread-safe: one request of one session at a time (as RunRequest).
#ifndef TANDEM_SERVICES_COORDINATOR_WORKER_CONSTRAINT_H_
#define TANDEM_SERVICES_COORDINATOR_WORKER_CONSTRAINT_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "services/coordinator/round_params.h"
#include "services/coordinator/worker_client.h"

namespace tandem {

// Sends the request's constraint (or a clear) on `stream`; the worker's error as is (an
// INVALID_ARGUMENT naming the culprit, UNAVAILABLE for a broken stream, ...).
absl::Status ConstrainStream(WorkerStream& stream, const RoundParams& params,
                             absl::Duration timeout);

// Puts the request's constraint on the session's streams, when it has one or a stream may
// hold an earlier one: the target's (failing over through `reopen` as a verify would), then
// the draft's, which is closed when it fails (the request goes on without it: drafts only
// propose). The target's error otherwise.
absl::Status ConstrainWorkers(SessionWorkers& session, const RoundParams& params,
                              const ReopenTarget& reopen);

// `reopen`, whose new streams get the request's constraint before they are used; a stream
// that fails to take it is replaced in turn (within `reopen`'s own bounds).
ReopenTarget ConstrainingReopen(const ReopenTarget& reopen, const RoundParams& params);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_WORKER_CONSTRAINT_H_
