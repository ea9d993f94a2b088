// The two sides of a speculative round as the round driver (round_driver.h) sees them: a
// DraftBackend proposes guesses, a TargetBackend verifies them. In-process backends wrap
// DraftGuesses/VerifyGuesses (in_process_backends.h); the coordinator's wrap the worker
// streams (services/coordinator/remote_backends.h); the n-gram drafter needs no model
// (ngram_draft_backend.h). All in core types: proto conversion happens in the remote ones.
//
// Every call names the sequence it works on (the conversation so far with the pending token
// last) and syncs by position, so a backend that lost its cache re-fills it from the
// sequence. Calls are asynchronous: each returns a std::future that becomes ready when its
// outputs are written (a synchronous backend returns a ready one). The sequence and the
// outputs must stay alive and untouched until then.
//
// Thread-safety: a backend is driven by one driver; the driver waits for a call's future
// before it makes the next call on the same backend, but may have a draft call and a target
// call in flight at once (their prefills run concurrently; with pipelining the next round's
// draft runs while the target verifies).
#ifndef TANDEM_CORE_GENERATION_ROUND_BACKENDS_H_
#define TANDEM_CORE_GENERATION_ROUND_BACKENDS_H_

#include <cstdint>
#include <future>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/generation/sampler.h"

namespace tandem {

// A draft's guesses g1..gk with the distributions q1..qk they were drawn from (sparse).
// `q` may hold more entries than `tokens` (reused buffers); only the first tokens.size() count.
struct Proposal {
  std::vector<int32_t> tokens;
  std::vector<SparseDistribution> q;
  // The drafter's own compute for the call (a worker's reply's compute_seconds; in-process
  // the thread's CPU time when timed); 0 where not measured. Read by the cost model of k.
  double compute_seconds = 0;
  // The call's wall seconds as the backend measured them, for a call that runs on a thread
  // of its own (the driver cannot see when its future became ready); 0: the driver's clock.
  double wall_seconds = 0;
};

// What the target made of a round.
struct Verdict {
  int32_t accepted = 0;     // leading guesses kept
  int32_t next_token = -1;  // the replacement of the first rejected guess, or the bonus token
  // Tokens the target drew alone after next_token (a verify without guesses that was allowed
  // to continue, VerifyCall::continue_limit), in order.
  std::vector<int32_t> continued;
  double compute_seconds = 0;  // the target's own compute for the call, as Proposal's
};

struct VerifyCall {
  absl::Span<const int32_t> sequence;  // the conversation so far, the pending token last
  // The guesses to test; a backend may cut `tokens` to those it tested (e.g. up to the first
  // id outside its vocabulary).
  Proposal* proposal = nullptr;
  // Without guesses: the most tokens after next_token the target may draw alone (the rest of
  // the request's token limit); a backend draws at most this many, and may draw none.
  int32_t continue_limit = 0;
};

class DraftBackend {
 public:
  virtual ~DraftBackend() = default;
  // Brings the draft's cache to sequence[0, end).
  virtual std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) = 0;
  // Up to `k` guesses after `sequence` into `out` (fewer or none is allowed).
  virtual std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                          Proposal* out) = 0;
  // The driver stops using this draft (it failed, or the target refused its guesses): free
  // what it holds. No call follows.
  virtual void Abandon() {}
};

class TargetBackend {
 public:
  virtual ~TargetBackend() = default;
  // Brings the target's cache to sequence[0, end); `reused` receives how many of those
  // tokens the cache already held.
  virtual std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                            int64_t* reused) = 0;
  // Runs the pending token and the guesses as one batched pass and applies the acceptance
  // rule. kInvalidArgument when it refuses the guesses (a draft not to be trusted).
  virtual std::future<absl::Status> Verify(const VerifyCall& call, Verdict* out) = 0;
};

// A future that is ready with `status` (the synchronous backends' answer).
std::future<absl::Status> ReadyFuture(absl::Status status);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_ROUND_BACKENDS_H_
