// Runs one Generate request over a session's workers: prefill, then speculative rounds
// (DESIGN.md §2) — draft k guesses on the draft worker, verify them in one batched pass on
// the target worker — appending what the target accepts to the session's history.
//
// Caches sync by position: the loop tracks how many leading history tokens each worker's
// cache holds and sends only what is new. Every worker call has a deadline (CallDeadlines).
// If the draft fails or is late, the request goes on with the target alone (k = 0 rounds: the
// target samples one token per verify); if the target fails or is late, `reopen_target` gives
// a stream on another (or the restarted) replica, which is re-synced from the history.
// No accepted token is lost or repeated.
//
// The loop is core's RoundDriver (round_driver.h) over WorkerTarget and WorkerDraft
// (remote_backends.h) or the n-gram drafter; the two prefills run concurrently. This file
// converts the request and the outcome.
//
// Not thread-safe: one request of one session at a time.
#ifndef TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_
#define TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/generation/draft_cost_model.h"
#include "core/generation/sampler.h"
#include "core/generation/speculation_defaults.h"
#include "services/coordinator/worker_client.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// A session's workers and what their caches hold.
struct SessionWorkers {
  std::unique_ptr<WorkerStream> target;
  std::unique_ptr<WorkerStream> draft;  // null: no draft (or it failed)
  int64_t target_known = 0;             // leading history tokens the target's cache holds
  int64_t draft_known = 0;
  std::vector<int32_t> history;  // every token fed so far: prompts and replies
  int32_t context_size = 0;
  // The cost model for k (RoundParams.adaptive), kept across the session's requests.
  std::optional<DraftCostModel> cost_model;
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
};

struct RoundOutcome {
  v1::FinishReason finish_reason = v1::FINISH_REASON_UNSPECIFIED;
  int32_t prompt_tokens = 0;
  int32_t cached_prompt_tokens = 0;  // what the target worker reused (SyncResult.reused_tokens)
  int32_t generated = 0;
  double prefill_seconds = 0;
  v1::SpeculationStats speculation;
};

// Called after each round with its new tokens (before stop strings); returns false to stop
// (client gone, stop string seen). It may cut `tokens` to those it used — up to the one that
// completed a stop string — and the rest count as never generated. A stop reported here wins
// over the token limit or a full context reached by the same tokens: STOP_STRING.
using RoundCallback = std::function<bool(std::vector<int32_t>& tokens)>;
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

absl::StatusOr<RoundOutcome> RunRequest(SessionWorkers& session, const RoundParams& params,
                                        const RoundCallback& on_tokens,
                                        const ReopenTarget& reopen_target,
                                        const RoundObserver& observer);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ROUND_LOOP_H_
