#include "core/generation/round_driver.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool IsStopId(absl::Span<const int32_t> stop_ids, int32_t token) {
  return std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end();
}

}  // namespace

RoundDriver::RoundDriver(TargetBackend& target, DraftBackend* draft, DraftBackend* fallback,
                         DraftLengthPolicy& policy, RoundDriverOptions options, RoundEvents events)
    : target_(target),
      primary_(draft),
      fallback_(fallback),
      draft_(draft != nullptr ? draft : fallback),
      policy_(policy),
      options_(options),
      events_(std::move(events)) {}

absl::Status RoundDriver::DropDraft(const absl::Status& why, GenerationResult& result) {
  if (!options_.survive_draft_failure) return why;
  draft_->Abandon();
  draft_ = draft_ == primary_ ? fallback_ : nullptr;
  result.speculation.draft_failed = true;
  if (events_.draft_dropped) events_.draft_dropped(why);
  return absl::OkStatus();
}

absl::Status RoundDriver::Prefill(absl::Span<const int32_t> sequence, GenerationResult& result) {
  // Both caches to the context but the pending token, which the first round runs. Both
  // calls start before either is waited for, so an asynchronous backend's prefill runs
  // while the other's does (the draft first: the coordinator's target syncs on this thread).
  const int64_t end = static_cast<int64_t>(sequence.size()) - 1;
  const auto start = Clock::now();
  std::future<absl::Status> draft;
  if (draft_ != nullptr) draft = draft_->Prefill(sequence, end);
  int64_t reused = 0;
  std::future<absl::Status> target = target_.Prefill(sequence, end, &reused);
  const absl::Status target_status = target.get();
  const absl::Status draft_status = draft.valid() ? draft.get() : absl::OkStatus();
  RETURN_IF_ERROR(target_status);
  if (!draft_status.ok()) RETURN_IF_ERROR(DropDraft(draft_status, result));
  result.stats.reused_tokens = reused;
  result.stats.prompt_tokens = static_cast<int64_t>(sequence.size()) - reused;
  result.stats.prefill_seconds = SecondsSince(start);
  return absl::OkStatus();
}

absl::Status RoundDriver::Verify(absl::Span<const int32_t> sequence, int32_t continue_limit) {
  VerifyCall call;
  call.sequence = sequence;
  call.proposal = &proposal_;
  call.continue_limit = proposal_.tokens.empty() ? continue_limit : 0;
  verdict_.continued.clear();
  verdict_.compute_seconds = 0;
  return target_.Verify(call, &verdict_).get();
}

absl::Status RoundDriver::Force(std::vector<int32_t>& sequence, int32_t limit,
                                absl::Span<const int32_t> stop_ids, std::vector<int32_t>* forced) {
  forced->clear();
  if (!constrained_.active()) return absl::OkStatus();
  while (static_cast<int32_t>(forced->size()) < limit) {
    absl::Status status = MaskAt(constrained_, sequence, &forced_mask_);
    if (!status.ok()) return forced->empty() ? status : absl::OkStatus();
    const int32_t token = OnlyAllowedToken(forced_mask_);
    if (token < 0) break;
    forced->push_back(token);
    sequence.push_back(token);
    if (IsStopId(stop_ids, token)) break;  // nothing follows it
  }
  return absl::OkStatus();
}

void RoundDriver::PrependForced() {
  const size_t forced = forced_.size();
  if (forced == 0) return;
  std::vector<int32_t>& tokens = proposal_.tokens;
  std::vector<SparseDistribution>& q = proposal_.q;
  const size_t drafted = tokens.size();
  // The spare q entries after the draft's (their buffers reused) move to the front.
  if (q.size() < drafted + forced) q.resize(drafted + forced);
  std::rotate(q.begin(), q.begin() + drafted, q.begin() + drafted + forced);
  tokens.insert(tokens.begin(), forced_.begin(), forced_.end());
  for (size_t i = 0; i < forced; ++i) {
    q[i].ids.assign(1, forced_[i]);
    q[i].probabilities.assign(1, 1.0f);
  }
}

absl::Status RoundDriver::ForceAndDraft(std::vector<int32_t>& sequence, int32_t k,
                                        const RoundLimits& limits, RoundReport& report,
                                        GenerationResult& result, int32_t* asked) {
  const size_t length = sequence.size();
  RETURN_IF_ERROR(Force(sequence, k, limits.stop_ids, &forced_));
  const int32_t forced = static_cast<int32_t>(forced_.size());
  const bool stopped = forced > 0 && IsStopId(limits.stop_ids, forced_.back());
  absl::Status drafted;
  if (draft_ != nullptr && forced < k && !stopped) {
    *asked = k - forced + (options_.pipelined ? 1 : 0);
    const auto start = Clock::now();
    drafted = draft_->Draft(sequence, *asked, &proposal_).get();
    report.draft_seconds = std::max(SecondsSince(start), proposal_.wall_seconds);
  }
  sequence.resize(length);
  if (drafted.ok()) return absl::OkStatus();
  proposal_.tokens.clear();
  proposal_.compute_seconds = 0;
  return DropDraft(drafted, result);  // the round goes on without the draft's guesses
}

absl::Status RoundDriver::ForceAndPredict(std::vector<int32_t>& sequence, int32_t k,
                                          const RoundLimits& limits) {
  const size_t length = sequence.size();
  const absl::Status forced = Force(sequence, k, limits.stop_ids, &forced_);
  const int32_t room = k - static_cast<int32_t>(forced_.size());
  if (forced.ok() && room > 0 && (forced_.empty() || !IsStopId(limits.stop_ids, forced_.back()))) {
    options_.prediction->Guesses(sequence, room, &predicted_);
  } else {
    predicted_.clear();
  }
  sequence.resize(length);
  RETURN_IF_ERROR(forced);
  proposal_.tokens = predicted_;
  if (proposal_.q.size() < predicted_.size()) proposal_.q.resize(predicted_.size());
  for (size_t i = 0; i < predicted_.size(); ++i) {
    proposal_.q[i].ids.assign(1, predicted_[i]);
    proposal_.q[i].probabilities.assign(1, 1.0f);
  }
  return absl::OkStatus();
}

absl::Status RoundDriver::Guesses(std::vector<int32_t>& sequence, int32_t k,
                                  const RoundLimits& limits, RoundReport& report,
                                  GenerationResult& result, int32_t* standin) {
  *standin = -1;
  proposal_.tokens.clear();
  proposal_.compute_seconds = 0;
  proposal_.wall_seconds = 0;
  forced_.clear();
  const bool predrafted = predrafted_;
  predrafted_ = false;
  if (k == 0) return absl::OkStatus();
  int32_t asked = 0;  // what the draft call was asked for
  if (predicting_) {
    RETURN_IF_ERROR(ForceAndPredict(sequence, k, limits));
    asked = static_cast<int32_t>(proposal_.tokens.size());
  } else if (predrafted) {
    std::swap(proposal_, ahead_);
    std::swap(forced_, ahead_forced_);
    asked = ahead_asked_;
    report.draft_seconds = ahead_seconds_;
    ++result.speculation.predrafted_rounds;
  } else {
    RETURN_IF_ERROR(ForceAndDraft(sequence, k, limits, report, result, &asked));
  }
  // A pre-drafted round whose k shrank keeps the forced tokens it still has room for.
  if (static_cast<int32_t>(forced_.size()) > k) forced_.resize(k);
  const size_t room = static_cast<size_t>(k) - forced_.size();  // for the draft's guesses
  // The call's compute and wall time for the guesses the round tests: the stand-in's share of
  // the compute comes off both (the cost model adds it back for pipelined rounds).
  // More guesses than asked go to the target as they are, which refuses them (a draft not to
  // be trusted).
  const size_t produced = proposal_.tokens.size();
  const size_t used =
      produced > static_cast<size_t>(asked) ? produced : std::min<size_t>(room, produced);
  if (options_.pipelined && produced > used) *standin = proposal_.tokens[used];
  proposal_.tokens.resize(used);
  const double extra =
      produced > 0 ? proposal_.compute_seconds * static_cast<double>(produced - used) / produced
                   : 0;
  report.draft_compute_seconds = proposal_.compute_seconds - extra;
  report.draft_seconds = std::max(0.0, report.draft_seconds - extra);
  PrependForced();
  return absl::OkStatus();
}

void RoundDriver::StartAhead(std::vector<int32_t>& sequence, int32_t standin, int32_t room,
                             const RoundLimits& limits, GenerationResult& result) {
  ahead_.tokens.clear();  // nothing pre-drafted unless a call starts below
  ahead_forced_.clear();
  if (draft_ == nullptr || standin < 0) return;
  // The next round's k as the loop will clamp it if every guess is kept and s is right.
  const int32_t used = static_cast<int32_t>(proposal_.tokens.size());
  const size_t length = sequence.size();
  const int64_t next_length = static_cast<int64_t>(length) + used + 1;
  const int64_t k = std::min<int64_t>(
      {policy_.Next(), limits.context_size - next_length, static_cast<int64_t>(room) - used - 1});
  if (k < 1) return;
  sequence.insert(sequence.end(), proposal_.tokens.begin(), proposal_.tokens.end());
  sequence.push_back(standin);
  // The next round's forced tokens, as its Guesses would find them; a round they fill (or end)
  // needs no draft call, so none runs ahead for it.
  if (!Force(sequence, static_cast<int32_t>(k), limits.stop_ids, &ahead_forced_).ok() ||
      static_cast<int64_t>(ahead_forced_.size()) == k ||
      (!ahead_forced_.empty() && IsStopId(limits.stop_ids, ahead_forced_.back()))) {
    sequence.resize(length);
    return;
  }
  ahead_.compute_seconds = 0;
  ahead_.wall_seconds = 0;
  const auto start = Clock::now();
  ahead_asked_ = static_cast<int32_t>(k - static_cast<int64_t>(ahead_forced_.size())) + 1;
  ahead_call_ = draft_->Draft(sequence, ahead_asked_, &ahead_);
  ahead_seconds_ = SecondsSince(start);  // all of it for a synchronous backend
  ++result.speculation.ahead_drafts;
}

absl::Status RoundDriver::WaitAhead(std::vector<int32_t>& sequence, size_t length) {
  if (!ahead_call_.valid()) return absl::OkStatus();
  absl::Status drafted = ahead_call_.get();
  sequence.resize(length);
  ahead_seconds_ = std::max(ahead_seconds_, ahead_.wall_seconds);
  if (!drafted.ok()) ahead_.tokens.clear();
  return drafted;
}

absl::Status RoundDriver::Round(std::vector<int32_t>& sequence, int32_t k, int32_t room,
                                const RoundLimits& limits, GenerationResult& result) {
  RoundReport report;
  report.asked = k;
  const size_t length = sequence.size();
  int32_t standin = -1;
  RETURN_IF_ERROR(Guesses(sequence, k, limits, report, result, &standin));
  DraftBackend* const drafted_by = draft_;
  const int32_t guessed = static_cast<int32_t>(proposal_.tokens.size());
  if (options_.pipelined) StartAhead(sequence, standin, room, limits, result);
  const auto start = Clock::now();
  absl::Status verified = Verify(absl::MakeConstSpan(sequence.data(), length), room);
  report.verify_seconds = SecondsSince(start);
  // No call stays in flight past this point.
  const absl::Status ahead = WaitAhead(sequence, length);
  const absl::Span<const int32_t> current(sequence.data(), length);
  if (verified.code() == absl::StatusCode::kInvalidArgument && !predicting_ &&
      proposal_.tokens.size() > forced_.size() && draft_ != nullptr && draft_ == drafted_by &&
      options_.survive_draft_failure) {
    // The target refused the guesses (too many, or a q that could not have drawn its guess):
    // the draft is not to be trusted, and the round goes on without guesses.
    RETURN_IF_ERROR(DropDraft(verified, result));
    proposal_.tokens.clear();
    verified = Verify(current, room);
    report.verify_seconds = SecondsSince(start);
  }
  RETURN_IF_ERROR(verified);
  if (!ahead.ok() && draft_ == drafted_by) RETURN_IF_ERROR(DropDraft(ahead, result));
  report.verify_compute_seconds = verdict_.compute_seconds;
  // The guesses tested (the target may cut them), the forced ones first.
  const int32_t tested = static_cast<int32_t>(proposal_.tokens.size());
  const int32_t accepted = verdict_.accepted;
  if (accepted < 0 || accepted > tested) {
    return absl::InternalError(
        absl::StrCat("target accepted ", accepted, " of ", tested, " guesses"));
  }
  const int32_t continued = static_cast<int32_t>(verdict_.continued.size());
  if (continued > (tested == 0 ? room : 0)) {
    return absl::InternalError(absl::StrCat("target continued ", continued, " tokens unasked"));
  }
  // The pre-drafted guesses are the next round's when the draft foresaw this round's tokens.
  predrafted_ = ahead.ok() && draft_ == drafted_by && standin >= 0 && tested == guessed &&
                accepted == tested && verdict_.next_token == standin && !ahead_.tokens.empty();
  report.forced = std::min(static_cast<int32_t>(forced_.size()), tested);
  report.forced_accepted = std::min(accepted, report.forced);
  const int32_t guessed_tested = tested - report.forced;
  const int32_t guessed_accepted = accepted - report.forced_accepted;
  (predicting_ ? report.predicted : report.drafted) = guessed_tested;
  (predicting_ ? report.predicted_accepted : report.accepted) = guessed_accepted;
  report.standin_tested = standin >= 0 && tested == guessed && accepted == tested;
  report.standin_kept = report.standin_tested && verdict_.next_token == standin;
  report.yielded = accepted + 1 + continued;
  const auto end = Clock::now();
  report.round_seconds = std::chrono::duration<double>(end - last_round_end_).count();
  last_round_end_ = end;
  Record(report, result.speculation);
  // A round of forced guesses alone says nothing of the draft, nor of the target alone; a
  // predicted round says nothing of the draft.
  if (predicting_) {
    options_.prediction_policy->Observe(report);
  } else if (report.forced == 0 || report.drafted > 0) {
    policy_.Observe(report);
  }
  if (events_.round_done) events_.round_done(report);
  return absl::OkStatus();
}

void RoundDriver::Record(const RoundReport& round, SpeculationStats& stats) {
  ++stats.rounds;
  stats.drafted += round.drafted;
  stats.accepted += round.accepted;
  stats.forced += round.forced;
  stats.forced_accepted += round.forced_accepted;
  stats.predicted += round.predicted;
  stats.predicted_accepted += round.predicted_accepted;
  if (round.predicted > 0) ++stats.predicted_rounds;
  stats.round_tokens += round.forced_accepted + round.predicted_accepted + round.accepted + 1;
  if (static_cast<int32_t>(stats.drafted_per_position.size()) < round.drafted) {
    stats.drafted_per_position.resize(round.drafted);
    stats.accepted_per_position.resize(round.drafted);
  }
  for (int32_t i = 0; i < round.drafted; ++i) ++stats.drafted_per_position[i];
  for (int32_t i = 0; i < round.accepted; ++i) ++stats.accepted_per_position[i];
}

int32_t RoundDriver::NextK(absl::Span<const int32_t> sequence, int64_t room,
                           const RoundLimits& limits) {
  // No more guesses than the cache can verify or the limit can use.
  const int64_t most =
      std::max<int64_t>(0, std::min<int64_t>(limits.context_size - sequence.size(), room));
  predicting_ = false;
  if (options_.prediction != nullptr && options_.prediction_policy != nullptr && most > 0) {
    options_.prediction->Guesses(sequence, 1, &predicted_);
    if (!predicted_.empty()) {
      const int32_t k = options_.prediction_policy->Next();
      if (k > 0) {
        predicting_ = true;
        predrafted_ = false;  // a pre-drafted round's guesses give way to the prediction's
        return static_cast<int32_t>(std::min<int64_t>(k, most));
      }
      options_.prediction_policy->SatOut();
    }
  }
  return static_cast<int32_t>(std::min<int64_t>(policy_.Next(), most));
}

absl::StatusOr<GenerationResult> RoundDriver::Generate(std::vector<int32_t>& sequence,
                                                       const RoundLimits& limits,
                                                       RoundTokensCallback on_round) {
  if (sequence.empty()) return absl::InvalidArgumentError("round driver: the context is empty");
  GenerationResult result;
  result.speculation.pipelined = options_.pipelined && draft_ != nullptr;
  predrafted_ = false;
  constrained_ = {options_.forced_tokens, static_cast<int64_t>(sequence.size())};
  RETURN_IF_ERROR(Prefill(sequence, result));
  const auto decode_start = Clock::now();
  last_round_end_ = decode_start;
  StopRules rules(limits.stop_ids, limits.max_tokens, limits.context_size);
  std::optional<StopReason> stop;
  while (!stop) {
    const int64_t length = static_cast<int64_t>(sequence.size());
    // The most tokens after the next one the limit can use.
    const int64_t room = std::max<int64_t>(0, limits.max_tokens - rules.generated() - 1);
    const int32_t k = NextK(sequence, room, limits);
    RETURN_IF_ERROR(Round(sequence, k, static_cast<int32_t>(room), limits, result));
    // The round's tokens: the kept guesses, the target's next token, what it continued with.
    round_tokens_.assign(proposal_.tokens.begin(), proposal_.tokens.begin() + verdict_.accepted);
    round_tokens_.push_back(verdict_.next_token);
    round_tokens_.insert(round_tokens_.end(), verdict_.continued.begin(), verdict_.continued.end());
    stop = rules.EmitRound(round_tokens_, length, on_round, &emitted_);
    sequence.insert(sequence.end(), emitted_.begin(), emitted_.end());
  }
  result.stop_reason = *stop;
  result.stop_token = rules.stop_token();
  result.stats.generated_tokens = rules.generated();
  result.stats.decode_seconds = SecondsSince(decode_start);
  // No drafter left (none given, or the draft dropped with no fallback): no k is in use.
  result.speculation.final_draft_tokens = draft_ != nullptr ? policy_.Next() : 0;
  policy_.Report(result.speculation);
  return result;
}

}  // namespace tandem
