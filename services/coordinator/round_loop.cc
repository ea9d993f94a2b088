#include "services/coordinator/round_loop.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/ngram_draft_backend.h"
#include "core/generation/round_driver.h"
#include "core/generation/stop_rules.h"
#include "services/coordinator/remote_backends.h"
#include "services/coordinator/worker_constraint.h"
#include "wire/cost_model_proto.h"

namespace tandem {
namespace {

v1::FinishReason FinishReasonOf(StopReason reason) {
  switch (reason) {
    case StopReason::kStopId:
      return v1::FINISH_REASON_STOP_TOKEN;
    case StopReason::kCallback:
      return v1::FINISH_REASON_STOP_STRING;
    case StopReason::kMaxTokens:
      return v1::FINISH_REASON_LENGTH;
    case StopReason::kCacheFull:
      return v1::FINISH_REASON_CONTEXT_FULL;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

// The wire's statistics count only rounds that tested guesses.
void SpeculationToProto(const SpeculationStats& stats, v1::SpeculationStats* proto) {
  const int64_t rounds = stats.drafted_per_position.empty() ? 0 : stats.drafted_per_position[0];
  proto->set_rounds(static_cast<int32_t>(rounds));
  proto->set_drafted_tokens(static_cast<int32_t>(stats.drafted));
  proto->set_accepted_tokens(static_cast<int32_t>(stats.accepted));
  for (int64_t accepted : stats.accepted_per_position) {
    proto->add_accepted_per_position(static_cast<int32_t>(accepted));
  }
  if (stats.drafted > 0) {
    proto->set_acceptance_rate(static_cast<double>(stats.accepted) / stats.drafted);
    proto->set_tokens_per_round(static_cast<double>(stats.accepted + rounds) / rounds);
  }
  proto->set_final_draft_tokens(stats.final_draft_tokens);
  proto->set_draft_failed(stats.draft_failed);
  proto->set_pipelined(stats.pipelined);
  proto->set_ahead_drafts(static_cast<int32_t>(stats.ahead_drafts));
  proto->set_predrafted_rounds(static_cast<int32_t>(stats.predrafted_rounds));
  proto->set_forced_tokens(static_cast<int32_t>(stats.forced));
  proto->set_forced_accepted_tokens(static_cast<int32_t>(stats.forced_accepted));
  proto->set_predicted_tokens(static_cast<int32_t>(stats.predicted));
  proto->set_predicted_accepted_tokens(static_cast<int32_t>(stats.predicted_accepted));
  proto->set_predicted_rounds(static_cast<int32_t>(stats.predicted_rounds));
  if (stats.cost_model) CostEstimatesToProto(*stats.cost_model, proto->mutable_cost_model());
}

}  // namespace

absl::StatusOr<RoundOutcome> RunRequest(SessionWorkers& session, const RoundParams& params,
                                        const RoundCallback& on_tokens,
                                        const ReopenTarget& reopen_target,
                                        const RoundObserver& observer) {
  const std::vector<int32_t>& context = params.context;
  if (context.empty()) return absl::InvalidArgumentError("empty prompt");
  if (static_cast<int64_t>(context.size()) > session.context_size) {
    return absl::OutOfRangeError(absl::StrCat(
        "prompt of ", context.size(), " tokens exceeds the context of ", session.context_size));
  }
  if (params.max_tokens < 1) return absl::InvalidArgumentError("max_tokens must be >= 1");
  // The workers' caches hold at most what this prompt shares with the history.
  const int64_t n = static_cast<int64_t>(context.size());
  const int64_t reuse = std::min(CommonPrefixLength(session.history, context), n - 1);
  session.target_known = std::min(session.target_known, reuse);
  session.draft_known = std::min(session.draft_known, reuse);
  session.history = context;

  // New target streams get the request's constraint; both workers get it now.
  const ReopenTarget reopen = ConstrainingReopen(reopen_target, params);
  RETURN_IF_ERROR(ConstrainWorkers(session, params, reopen));
  // The coordinator's own state of the constraint cuts the n-gram drafter's guesses and finds
  // the forced tokens; the driver takes the output to begin after its sequence, so a request
  // resumed from its history (memory_pause.h) goes without forced tokens.
  const OutputConstraint constrained{params.forced_tokens, params.constraint_start};
  WorkerTarget target(session, params, reopen, observer);
  std::optional<WorkerDraft> worker_draft;
  NgramDraft ngram(NgramOptions(), constrained);
  DraftBackend* draft = nullptr;
  DraftBackend* fallback = nullptr;
  if (params.speculate) {
    if (params.ngram) {
      draft = &ngram;
    } else {
      if (session.draft != nullptr) draft = &worker_draft.emplace(session, params, observer);
      if (params.ngram_fallback) fallback = &ngram;
    }
  }
  FixedDraftLength fixed(std::max(1, params.draft_tokens));
  if (params.adaptive && !session.cost_model) {
    DraftCostOptions cost;
    cost.max_draft_tokens = params.max_draft_tokens;
    cost.pipelined = params.pipelined;  // the draft's calls overlap the target's
    // A probe costs less when the draft's time hides behind the verify: pipelined sessions
    // re-measure the acceptance sooner after choosing the target alone (the first choice
    // rests on one round's guesses).
    if (params.pipelined) cost.probe_after_rounds = 8;
    session.cost_model.emplace(cost, params.draft_tokens);
  }
  DraftLengthPolicy& policy =
      params.adaptive ? static_cast<DraftLengthPolicy&>(*session.cost_model) : fixed;
  RoundDriverOptions options;
  options.survive_draft_failure = true;  // the request goes on with the target alone
  options.pipelined = params.pipelined;
  if (params.forced_tokens != nullptr && params.constraint_start == n) {
    options.forced_tokens = params.forced_tokens;
  }
  std::optional<PredictionDrafter> prediction;
  PredictionLengthPolicy prediction_policy;
  if (params.speculate && !params.prediction.empty()) {
    options.prediction = &prediction.emplace(params.prediction, params.output_start);
    options.prediction_policy = &prediction_policy;
  }
  RoundEvents events;
  events.draft_dropped = [&](const absl::Status&) {
    if (observer.draft_failed) observer.draft_failed();
  };
  events.round_done = [&](const RoundReport& round) {
    if (round.drafted > 0 && observer.round_tokens) observer.round_tokens(round.accepted + 1);
  };
  RoundDriver driver(target, draft, fallback, policy, options, std::move(events));
  RoundLimits limits;
  limits.stop_ids = params.stop_ids;
  limits.max_tokens = params.max_tokens;
  limits.context_size = session.context_size;
  absl::StatusOr<GenerationResult> result = driver.Generate(session.history, limits, on_tokens);
  // Tokens the caller cut off were never generated: neither cache holds them for the next
  // request.
  const int64_t length = static_cast<int64_t>(session.history.size());
  session.target_known = std::min(session.target_known, length);
  session.draft_known = std::min(session.draft_known, length);
  RETURN_IF_ERROR(result.status());

  RoundOutcome out;
  out.finish_reason = FinishReasonOf(result->stop_reason);
  out.prompt_tokens = static_cast<int32_t>(n);
  out.cached_prompt_tokens = target.cached_prompt_tokens();
  out.generated = static_cast<int32_t>(result->stats.generated_tokens);
  out.prefill_seconds = result->stats.prefill_seconds;
  SpeculationToProto(result->speculation, &out.speculation);
  return out;
}

}  // namespace tandem
