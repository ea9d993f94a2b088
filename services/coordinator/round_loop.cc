#include "services/coordinator/round_loop.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/ngram_drafter.h"
#include "services/common/cost_model_proto.h"
#include "services/common/proto_convert.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int64_t n = 0;
  while (n < static_cast<int64_t>(std::min(a.size(), b.size())) && a[n] == b[n]) ++n;
  return n;
}

// Sends `tokens[from, end)` so the worker holds tokens[0, end); returns how many of them the
// worker's cache already held (SyncResult.reused_tokens).
absl::StatusOr<int64_t> SyncStream(WorkerStream& stream, const std::vector<int32_t>& tokens,
                                   int64_t from, int64_t end, absl::Duration timeout) {
  v1::SessionRequest request;
  v1::SyncRequest* sync = request.mutable_sync();
  sync->set_position(static_cast<int32_t>(from));
  sync->mutable_tokens()->Assign(tokens.begin() + from, tokens.begin() + end);
  ASSIGN_OR_RETURN(v1::SessionResponse response, stream.Call(std::move(request), timeout));
  return std::min<int64_t>(response.sync().reused_tokens(), end);
}

// A target that broke its stream or did not answer in time: another replica may.
bool NeedsFailover(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

class Runner {
 public:
  Runner(SessionWorkers& session, const RoundParams& params, const ReopenTarget& reopen,
         const RoundObserver& observer)
      : s_(session), p_(params), reopen_(reopen), observer_(observer) {}

  absl::StatusOr<RoundOutcome> Run(const RoundCallback& on_tokens);

 private:
  absl::Status SyncTarget(int64_t end);
  absl::Duration TargetTimeout() const;
  absl::Duration DraftTimeout(int64_t tokens) const;
  void DraftDone(Clock::time_point start, int64_t tokens, const absl::Status& status);
  void DropDraft();
  absl::StatusOr<v1::DraftResult> Draft(int32_t k);
  v1::DraftResult NgramDraft(int32_t k) const;
  absl::StatusOr<v1::VerifyResult> Verify(const v1::DraftResult& guesses);
  int32_t ContinueTokens() const;
  void Adapt(int32_t drafted, int32_t accepted, int32_t produced);

  SessionWorkers& s_;
  const RoundParams& p_;
  const ReopenTarget& reopen_;
  const RoundObserver& observer_;
  std::vector<int32_t> seq_;  // the sequence with the pending token last
  int32_t k_ = 0;
  RoundTiming timing_;  // this round's calls, for the cost model
  RoundOutcome out_;
};

absl::Duration Runner::TargetTimeout() const {
  const absl::Duration left = p_.deadlines.request - absl::Now();
  return std::max(absl::Milliseconds(1), std::min(p_.deadlines.target, left));
}

absl::Duration Runner::DraftTimeout(int64_t tokens) const {
  return p_.deadlines.draft ? p_.deadlines.draft(tokens) : p_.deadlines.draft_fallback;
}

void Runner::DraftDone(Clock::time_point start, int64_t tokens, const absl::Status& status) {
  const auto elapsed = Clock::now() - start;
  if (p_.deadlines.draft_done) {
    p_.deadlines.draft_done(absl::FromChrono(elapsed), tokens, status);
  }
}

absl::Status Runner::SyncTarget(int64_t end) {
  absl::StatusOr<int64_t> reused =
      SyncStream(*s_.target, seq_, std::min(s_.target_known, end), end, TargetTimeout());
  while (NeedsFailover(reused.status()) && reopen_) {
    // The replica failed: a fresh stream on another one, re-filled from the history.
    ASSIGN_OR_RETURN(s_.target, reopen_(reused.status()));
    s_.target_known = 0;
    reused = SyncStream(*s_.target, seq_, 0, end, TargetTimeout());
  }
  RETURN_IF_ERROR(reused.status());
  s_.target_known = end;
  // What the worker really had, not what the coordinator last knew it had (a restart or an
  // idle timeout may have emptied it).
  out_.cached_prompt_tokens = static_cast<int32_t>(*reused);
  return absl::OkStatus();
}

void Runner::DropDraft() {
  s_.draft.reset();
  s_.draft_known = 0;
  out_.speculation.set_draft_failed(true);
  if (observer_.draft_failed) observer_.draft_failed();
}

absl::StatusOr<v1::DraftResult> Runner::Draft(int32_t k) {
  v1::SessionRequest request;
  v1::DraftRequest* draft = request.mutable_draft();
  const int64_t from = std::min<int64_t>(s_.draft_known, seq_.size() - 1);
  draft->set_position(static_cast<int32_t>(from));
  draft->mutable_tokens()->Assign(seq_.begin() + from, seq_.end());
  draft->set_num_tokens(k);
  SamplerConfigToProto(p_.sampler, draft->mutable_sampling());
  // Positions the draft runs: the new tokens in one batch, then one step per further guess.
  const int64_t work = draft->tokens_size() + k - 1;
  const auto start = Clock::now();
  absl::StatusOr<v1::SessionResponse> response =
      s_.draft->Call(std::move(request), DraftTimeout(work));
  if (observer_.draft_call) observer_.draft_call(SecondsSince(start));
  DraftDone(start, work, response.status());
  if (!response.ok()) return response.status();
  timing_.draft_seconds = SecondsSince(start);
  timing_.draft_compute_seconds = response->compute_seconds();
  return response->draft();
}

v1::DraftResult Runner::NgramDraft(int32_t k) const {
  v1::DraftResult result;
  for (int32_t token : NgramGuesses(seq_, k)) {
    v1::DraftToken* guess = result.add_guesses();
    guess->set_token_id(token);
    guess->mutable_distribution()->add_token_ids(token);  // q is one-hot: q(g) = 1
    guess->mutable_distribution()->add_probabilities(1.0f);
  }
  return result;
}

absl::StatusOr<v1::VerifyResult> Runner::Verify(const v1::DraftResult& guesses) {
  while (true) {
    v1::SessionRequest request;
    v1::VerifyRequest* verify = request.mutable_verify();
    const int64_t pending = static_cast<int64_t>(seq_.size()) - 1;
    const int64_t from = std::min(s_.target_known, pending);
    verify->set_position(static_cast<int32_t>(from));
    verify->mutable_tokens()->Assign(seq_.begin() + from, seq_.begin() + pending);
    verify->set_pending_token(seq_.back());
    *verify->mutable_guesses() = guesses.guesses();
    if (guesses.guesses_size() == 0) verify->set_continue_tokens(ContinueTokens());
    SamplerConfigToProto(p_.sampler, verify->mutable_sampling());
    verify->set_logprobs(p_.logprobs);
    verify->set_top_logprobs(p_.top_logprobs);
    const auto start = Clock::now();
    absl::StatusOr<v1::SessionResponse> response =
        s_.target->Call(std::move(request), TargetTimeout());
    if (observer_.verify_call) observer_.verify_call(SecondsSince(start));
    if (response.ok()) {
      timing_.verify_seconds = SecondsSince(start);
      timing_.verify_compute_seconds = response->compute_seconds();
      return response->verify();
    }
    if (!NeedsFailover(response.status()) || !reopen_) return response.status();
    // reopen_ bounds the attempts and the time spent waiting for a replica.
    ASSIGN_OR_RETURN(s_.target, reopen_(response.status()));
    s_.target_known = 0;  // the next attempt re-sends everything before the pending token
    if (out_.generated == 0) out_.cached_prompt_tokens = 0;  // a fresh stream has no cache
  }
}

int32_t Runner::ContinueTokens() const {
  if (p_.logprobs) return 0;  // the worker returns logprobs for a verify's own tokens only
  // Tokens past the request's limit would only be dropped.
  const int64_t wanted = p_.max_tokens - out_.generated - 1;
  return static_cast<int32_t>(std::clamp<int64_t>(wanted, 0, p_.continue_tokens));
}

void Runner::Adapt(int32_t drafted, int32_t accepted, int32_t produced) {
  RoundTiming timing = timing_;
  timing_ = RoundTiming();
  if (!p_.adaptive) return;
  if (!s_.cost_model) {
    DraftCostOptions options;
    options.max_draft_tokens = p_.max_draft_tokens;
    s_.cost_model.emplace(options, p_.draft_tokens);
  }
  timing.drafted = drafted;
  timing.accepted = accepted;
  timing.produced = produced;
  if (drafted == 0) timing.draft_seconds = timing.draft_compute_seconds = 0;
  s_.cost_model->Record(timing);
  k_ = s_.cost_model->k();
}

absl::StatusOr<RoundOutcome> Runner::Run(const RoundCallback& on_tokens) {
  const std::vector<int32_t>& context = p_.context;
  const int64_t n = static_cast<int64_t>(context.size());
  const int64_t reuse = std::min(CommonPrefix(s_.history, context), n - 1);
  s_.target_known = std::min(s_.target_known, reuse);
  s_.draft_known = std::min(s_.draft_known, reuse);
  seq_ = context;

  // Prefill: both caches to context[0, n - 1); the pending token runs in the first round.
  const auto prefill_start = Clock::now();
  out_.prompt_tokens = static_cast<int32_t>(n);
  RETURN_IF_ERROR(SyncTarget(n - 1));
  if (s_.draft != nullptr && p_.speculate && !p_.ngram && s_.draft_known < n - 1) {
    const int64_t work = n - 1 - s_.draft_known;
    const auto start = Clock::now();
    const absl::Status synced =
        SyncStream(*s_.draft, seq_, s_.draft_known, n - 1, DraftTimeout(work)).status();
    DraftDone(start, work, synced);
    if (synced.ok()) {
      s_.draft_known = n - 1;
    } else {
      DropDraft();
    }
  }
  out_.prefill_seconds = SecondsSince(prefill_start);
  s_.history = seq_;

  k_ = p_.adaptive && s_.cost_model ? s_.cost_model->k() : std::max(1, p_.draft_tokens);
  std::vector<int32_t> emitted;
  while (out_.finish_reason == v1::FINISH_REASON_UNSPECIFIED) {
    const int64_t len = static_cast<int64_t>(seq_.size());
    const int64_t k = std::max<int64_t>(
        0, std::min<int64_t>({k_, s_.context_size - len, p_.max_tokens - out_.generated - 1}));
    v1::DraftResult guesses;
    if (s_.draft != nullptr && p_.speculate && !p_.ngram && k > 0) {
      absl::StatusOr<v1::DraftResult> drafted = Draft(static_cast<int32_t>(k));
      if (drafted.ok()) {
        guesses = *std::move(drafted);
        // The draft ran the sequence and every guess but the last.
        s_.draft_known = len + std::max(0, guesses.guesses_size() - 1);
      } else {
        DropDraft();  // the request goes on with the target alone (or the n-gram drafter)
      }
    } else if (p_.speculate && (p_.ngram || p_.ngram_fallback) && k > 0) {
      guesses = NgramDraft(static_cast<int32_t>(k));
    }
    absl::StatusOr<v1::VerifyResult> verified = Verify(guesses);
    if (verified.status().code() == absl::StatusCode::kInvalidArgument &&
        guesses.guesses_size() > 0) {
      // The target refused the guesses (the draft is not trusted: too many, or a q that
      // could not have drawn its guess): the round goes on with the target alone.
      DropDraft();
      guesses.Clear();
      verified = Verify(guesses);
    }
    ASSIGN_OR_RETURN(v1::VerifyResult verdict, std::move(verified));
    const int32_t accepted = verdict.accepted_count();
    if (accepted < 0 || accepted > guesses.guesses_size()) {
      return absl::InternalError(
          absl::StrCat("target accepted ", accepted, " of ", guesses.guesses_size(), " guesses"));
    }
    if (p_.logprobs && verdict.logprobs_size() != accepted + 1) {
      return absl::InternalError(absl::StrCat("target returned ", verdict.logprobs_size(),
                                              " logprobs for ", accepted + 1, " tokens"));
    }
    if (observer_.verified) observer_.verified(verdict);
    const int32_t continued = verdict.continued_tokens_size();
    if (continued > (guesses.guesses_size() == 0 ? ContinueTokens() : 0)) {
      return absl::InternalError(absl::StrCat("target continued ", continued, " tokens unasked"));
    }
    // The target's cache holds the sequence, the kept guesses and every token it drew but the
    // last.
    s_.target_known = len + accepted + continued;
    if (guesses.guesses_size() > 0) {
      v1::SpeculationStats& st = out_.speculation;
      st.set_rounds(st.rounds() + 1);
      st.set_drafted_tokens(st.drafted_tokens() + guesses.guesses_size());
      st.set_accepted_tokens(st.accepted_tokens() + accepted);
      while (st.accepted_per_position_size() < guesses.guesses_size()) {
        st.add_accepted_per_position(0);
      }
      for (int32_t i = 0; i < accepted; ++i) {
        st.set_accepted_per_position(i, st.accepted_per_position(i) + 1);
      }
      if (observer_.round_tokens) observer_.round_tokens(accepted + 1);
    }
    Adapt(guesses.guesses_size(), accepted, accepted + 1 + continued);
    // Report the kept guesses and the target's token under the stop rules.
    emitted.clear();
    for (int32_t i = 0; i <= accepted + continued; ++i) {
      const int32_t token = i < accepted    ? guesses.guesses(i).token_id()
                            : i == accepted ? verdict.next_token()
                                            : verdict.continued_tokens(i - accepted - 1);
      if (std::find(p_.stop_ids.begin(), p_.stop_ids.end(), token) != p_.stop_ids.end()) {
        out_.finish_reason = v1::FINISH_REASON_STOP_TOKEN;
        break;
      }
      const int64_t position = static_cast<int64_t>(seq_.size());
      seq_.push_back(token);
      emitted.push_back(token);
      ++out_.generated;
      if (out_.generated >= p_.max_tokens) {
        out_.finish_reason = v1::FINISH_REASON_LENGTH;
        break;
      }
      if (position >= s_.context_size) {
        out_.finish_reason = v1::FINISH_REASON_CONTEXT_FULL;
        break;
      }
    }
    // The caller's stop (a stop string) came with one of these tokens, so it ranks before a
    // limit or a full context the last of them reached (stop_rules.h's order); a stop id
    // comes after every emitted token. A client gone away is the caller's to report.
    const size_t emitted_count = emitted.size();
    if (!emitted.empty() && !on_tokens(emitted)) {
      out_.finish_reason = v1::FINISH_REASON_STOP_STRING;
    }
    // Tokens the caller cut off (after the one that completed a stop string) were never
    // generated: not counted, not in the history.
    const size_t dropped = emitted_count - std::min(emitted_count, emitted.size());
    seq_.resize(seq_.size() - dropped);
    out_.generated -= static_cast<int32_t>(dropped);
    s_.target_known = std::min<int64_t>(s_.target_known, seq_.size());
    s_.draft_known = std::min<int64_t>(s_.draft_known, seq_.size());
    s_.history = seq_;
  }
  v1::SpeculationStats& st = out_.speculation;
  if (st.drafted_tokens() > 0) {
    st.set_acceptance_rate(static_cast<double>(st.accepted_tokens()) / st.drafted_tokens());
    st.set_tokens_per_round(static_cast<double>(st.accepted_tokens() + st.rounds()) / st.rounds());
  }
  st.set_final_draft_tokens(k_);
  if (p_.adaptive && s_.cost_model) {
    CostEstimatesToProto(s_.cost_model->Estimates(), st.mutable_cost_model());
  }
  return out_;
}

}  // namespace

absl::StatusOr<RoundOutcome> RunRequest(SessionWorkers& session, const RoundParams& params,
                                        const RoundCallback& on_tokens,
                                        const ReopenTarget& reopen_target,
                                        const RoundObserver& observer) {
  if (params.context.empty()) return absl::InvalidArgumentError("empty prompt");
  if (static_cast<int64_t>(params.context.size()) > session.context_size) {
    return absl::OutOfRangeError(absl::StrCat("prompt of ", params.context.size(),
                                              " tokens exceeds the context of ",
                                              session.context_size));
  }
  if (params.max_tokens < 1) return absl::InvalidArgumentError("max_tokens must be >= 1");
  Runner runner(session, params, reopen_target, observer);
  return runner.Run(on_tokens);
}

}  // namespace tandem
