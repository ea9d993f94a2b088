// What a request's rounds run over and with: a session's workers and what their caches hold
// (SessionWorkers), the request's settings (RoundParams) with the deadline of each worker call
// (CallDeadlines), a way to a new target stream after a failure (ReopenTarget), and the
// timing hooks for metrics (RoundObserver). The round loop (round_loop.h) takes them, and
// hands them to the round driver's backends over the worker streams (remote_backends.h).
//
// Plain structs: one request of one session uses them at a time.
#ifndef TANDEM_SERVICES_COORDINATOR_ROUND_PARAMS_H_
#define TANDEM_SERVICES_COORDINATOR_ROUND_PARAMS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/generation/draft_cost_model.h"
#include "core/generation/sampler.h"
#include "core/generation/speculation_defaults.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/token_constraint.h"
#include "services/coordinator/call_thread.h"
#include "services/coordinator/worker_client.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

// A session's workers and what their caches hold.
struct SessionWorkers {
  std::unique_ptr<WorkerStream> target;
  std::unique_ptr<WorkerStream> draft;  // null: no draft (or it failed)
  int64_t target_known = 0;             // leading history tokens the target's cache holds
  int64_t draft_known = 0;
  std::vector<int32_t> history;  // every token fed so far: prompts and replies
  int32_t context_size = 0;
  // The streams may hold an output constraint (an earlier request's, or this one's): a request
  // without one clears it (worker_constraint.h). A new stream holds none.
  bool target_constrained = false;
  bool draft_constrained = false;
  // The cost model for k (RoundParams.adaptive), kept across the session's requests.
  std::optional<DraftCostModel> cost_model;
  // Runs the draft's calls that overlap the target's (remote_backends.h). Last, so that it is
  // joined before the streams its calls use are closed.
  CallThread draft_calls;
};

// How long each worker call may take, and what the draft's calls teach (draft_deadline.h).
struct CallDeadlines {
  // The deadline of a draft call that runs `tokens` positions; empty: draft_fallback.
  std::function<absl::Duration(int64_t tokens)> draft;
  absl::Duration draft_fallback = absl::Seconds(2);
  // Each draft call's outcome: its time and positions when it answered, else its error.
  std::function<void(absl::Duration seconds, int64_t tokens, const absl::Status& status)>
      draft_done;
  absl::Duration target = absl::Seconds(30);    // each target call
  absl::Time request = absl::InfiniteFuture();  // the request's own deadline
};

struct RoundParams {
  std::vector<int32_t> context;  // the whole conversation so far (the prompt)
  SamplerConfig sampler;
  int32_t max_tokens = SpeculationDefaults::kServerMaxTokens;
  std::vector<int32_t> stop_ids;
  bool speculate = true;
  int32_t draft_tokens = SpeculationDefaults::kDraftTokens;
  bool adaptive = false;  // k from the session's DraftCostModel (0: the target alone)
  int32_t max_draft_tokens = SpeculationLimits::kMaxDraftTokens;
  // Pipelined rounds (round_driver.h): the draft worker's next call runs during the verify.
  bool pipelined = false;
  // Guesses from the n-gram drafter (ngram_drafter.h) instead of the draft worker; or only
  // while the session has no draft worker (none configured, or it failed).
  bool ngram = false;
  bool ngram_fallback = false;
  // A round without guesses lets the target draw up to this many more tokens alone
  // (VerifyRequest.continue_tokens): a busy target then keeps its batch full instead of
  // waiting for every session's round trip between steps. 0: one token per verify.
  int32_t continue_tokens = 0;
  CallDeadlines deadlines;
  bool logprobs = false;     // ask the target for the emitted tokens' logprobs
  int32_t top_logprobs = 0;  // and this many alternatives per position
  // The output's constraint (kNone: none), sent to the workers once per request with its
  // first position (the prompt's length: a request resumed from its history keeps it) and
  // stop_ids as its end ids (worker_constraint.h).
  ConstraintSpec constraint;
  int64_t constraint_start = 0;
  // The coordinator's own state of it, compiled over the target's token bytes: the tokens it
  // forces are free guesses (RoundDriverOptions::forced_tokens), the n-gram drafter's guesses
  // are cut where it refuses them. Null without a constraint. Used on the request's thread.
  TokenConstraint* forced_tokens = nullptr;
  // The client's predicted output (GenerateRequest.prediction), or empty; its guesses follow
  // the output, which begins at output_start (the prompt's length: a request resumed from its
  // history keeps it).
  std::vector<int32_t> prediction;
  int64_t output_start = 0;
};

// Opens a target stream on another (or the restarted) replica after `failure` (kUnavailable
// or kDeadlineExceeded) of the current one; kUnavailable when none is left in time.
using ReopenTarget =
    std::function<absl::StatusOr<std::unique_ptr<WorkerStream>>(const absl::Status& failure)>;

// Timing hooks for metrics (may be empty).
struct RoundObserver {
  std::function<void(double seconds)> draft_call;
  std::function<void(double seconds)> verify_call;
  std::function<void()> draft_failed;
  // After each round that verified guesses: the tokens it yielded (accepted + 1).
  std::function<void(int32_t tokens)> round_tokens;
  // Each round's verify answer, before its tokens reach the RoundCallback (with
  // RoundParams.logprobs its logprobs hold one entry per token, in order).
  std::function<void(const v1::VerifyResult& verdict)> verified;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ROUND_PARAMS_H_
