#include "services/coordinator/remote_backends.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "wire/proto_convert.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sends `tokens[from, end)` so the worker holds tokens[0, end); returns how many of them the
// worker's cache already held (SyncResult.reused_tokens).
absl::StatusOr<int64_t> SyncStream(WorkerStream& stream, absl::Span<const int32_t> tokens,
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

}  // namespace

absl::Duration WorkerTarget::Timeout() const {
  const absl::Duration left = p_.deadlines.request - absl::Now();
  return std::max(absl::Milliseconds(1), std::min(p_.deadlines.target, left));
}

std::future<absl::Status> WorkerTarget::Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                                int64_t* reused) {
  return ReadyFuture(Sync(sequence, end, reused));
}

absl::Status WorkerTarget::Sync(absl::Span<const int32_t> sequence, int64_t end, int64_t* reused) {
  absl::StatusOr<int64_t> held =
      SyncStream(*s_.target, sequence, std::min(s_.target_known, end), end, Timeout());
  while (NeedsFailover(held.status()) && reopen_) {
    // The replica failed: a fresh stream on another one, re-filled from the history.
    ASSIGN_OR_RETURN(s_.target, reopen_(held.status()));
    s_.target_known = 0;
    held = SyncStream(*s_.target, sequence, 0, end, Timeout());
  }
  RETURN_IF_ERROR(held.status());
  s_.target_known = end;
  // What the worker really had, not what the coordinator last knew it had (a restart or an
  // idle timeout may have emptied it).
  cached_prompt_tokens_ = static_cast<int32_t>(*held);
  *reused = *held;
  return absl::OkStatus();
}

std::future<absl::Status> WorkerTarget::Verify(const VerifyCall& call, Verdict* out) {
  // A verify that returns logprobs returns them for its own tokens only: it never continues.
  const int32_t continue_tokens =
      p_.logprobs ? 0 : std::clamp(call.continue_limit, 0, p_.continue_tokens);
  absl::StatusOr<v1::VerifyResult> answer = Call(call, continue_tokens, &out->compute_seconds);
  if (!answer.ok()) return ReadyFuture(answer.status());
  result_ = *std::move(answer);
  verified_ = true;
  const absl::Status checked = Check(call, continue_tokens);
  if (!checked.ok()) return ReadyFuture(checked);
  if (observer_.verified) observer_.verified(result_);
  // The target's cache holds the sequence, the kept guesses and every token it drew but the
  // last.
  s_.target_known = static_cast<int64_t>(call.sequence.size()) + result_.accepted_count() +
                    result_.continued_tokens_size();
  out->accepted = result_.accepted_count();
  out->next_token = result_.next_token();
  out->continued.assign(result_.continued_tokens().begin(), result_.continued_tokens().end());
  return ReadyFuture(absl::OkStatus());
}

absl::StatusOr<v1::VerifyResult> WorkerTarget::Call(const VerifyCall& call, int32_t continue_tokens,
                                                    double* compute_seconds) {
  const Proposal& proposal = *call.proposal;
  while (true) {
    v1::SessionRequest request;
    v1::VerifyRequest* verify = request.mutable_verify();
    const int64_t pending = static_cast<int64_t>(call.sequence.size()) - 1;
    const int64_t from = std::min(s_.target_known, pending);
    verify->set_position(static_cast<int32_t>(from));
    verify->mutable_tokens()->Assign(call.sequence.begin() + from, call.sequence.begin() + pending);
    verify->set_pending_token(call.sequence.back());
    for (size_t i = 0; i < proposal.tokens.size(); ++i) {
      v1::DraftToken* guess = verify->add_guesses();
      guess->set_token_id(proposal.tokens[i]);
      // As the draft sent it: a guess without q (Gumbel coupling) goes on without one.
      const bool has_q = i < proposal.q.size() &&
                         !(proposal.q[i].ids.empty() && proposal.q[i].probabilities.empty());
      if (has_q) SparseToProto(proposal.q[i], guess->mutable_distribution());
    }
    if (proposal.tokens.empty()) verify->set_continue_tokens(continue_tokens);
    SamplerConfigToProto(p_.sampler, verify->mutable_sampling());
    verify->set_output_start(static_cast<int32_t>(p_.sampler.output_start));
    verify->set_logprobs(p_.logprobs);
    verify->set_top_logprobs(p_.top_logprobs);
    const auto start = Clock::now();
    absl::StatusOr<v1::SessionResponse> response = s_.target->Call(std::move(request), Timeout());
    if (observer_.verify_call) observer_.verify_call(SecondsSince(start));
    if (response.ok()) {
      *compute_seconds = response->compute_seconds();
      return std::move(*response->mutable_verify());
    }
    if (!NeedsFailover(response.status()) || !reopen_) return response.status();
    // reopen_ bounds the attempts and the time spent waiting for a replica.
    ASSIGN_OR_RETURN(s_.target, reopen_(response.status()));
    s_.target_known = 0;  // the next attempt re-sends everything before the pending token
    if (!verified_) cached_prompt_tokens_ = 0;  // a fresh stream has no cache
  }
}

absl::Status WorkerTarget::Check(const VerifyCall& call, int32_t continue_tokens) const {
  const int32_t guesses = static_cast<int32_t>(call.proposal->tokens.size());
  const int32_t accepted = result_.accepted_count();
  if (accepted < 0 || accepted > guesses) {
    return absl::InternalError(
        absl::StrCat("target accepted ", accepted, " of ", guesses, " guesses"));
  }
  if (p_.logprobs && result_.logprobs_size() != accepted + 1) {
    return absl::InternalError(absl::StrCat("target returned ", result_.logprobs_size(),
                                            " logprobs for ", accepted + 1, " tokens"));
  }
  const int32_t continued = result_.continued_tokens_size();
  if (continued > (guesses == 0 ? continue_tokens : 0)) {
    return absl::InternalError(absl::StrCat("target continued ", continued, " tokens unasked"));
  }
  return absl::OkStatus();
}

absl::Duration WorkerDraft::Timeout(int64_t tokens) const {
  return p_.deadlines.draft ? p_.deadlines.draft(tokens) : p_.deadlines.draft_fallback;
}

WorkerDraft::~WorkerDraft() {
  // The driver waits for every future it is given; this keeps a call from outliving the
  // backend even if it did not.
  s_.draft_calls.Wait();
}

std::future<absl::Status> WorkerDraft::Prefill(absl::Span<const int32_t> sequence, int64_t end) {
  if (s_.draft_known >= end) return ReadyFuture(absl::OkStatus());
  // On the session's call thread, so that the target's prefill does not wait for it.
  return s_.draft_calls.Run([this, sequence, end] { return Sync(sequence, end); });
}

absl::Status WorkerDraft::Sync(absl::Span<const int32_t> sequence, int64_t end) {
  const int64_t work = end - s_.draft_known;
  const auto start = Clock::now();
  const absl::Status synced =
      SyncStream(*s_.draft, sequence, s_.draft_known, end, Timeout(work)).status();
  if (p_.deadlines.draft_done) {
    p_.deadlines.draft_done(absl::FromChrono(Clock::now() - start), work, synced);
  }
  if (synced.ok()) s_.draft_known = end;
  return synced;
}

std::future<absl::Status> WorkerDraft::Draft(absl::Span<const int32_t> sequence, int32_t k,
                                             Proposal* out) {
  if (!p_.pipelined) return ReadyFuture(Call(sequence, k, out));
  // Pipelined: the call after a round's runs while the target verifies it.
  return s_.draft_calls.Run([this, sequence, k, out] { return Call(sequence, k, out); });
}

absl::Status WorkerDraft::Call(absl::Span<const int32_t> sequence, int32_t k, Proposal* out) {
  v1::SessionRequest request;
  v1::DraftRequest* draft = request.mutable_draft();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t from = std::min<int64_t>(s_.draft_known, length - 1);
  draft->set_position(static_cast<int32_t>(from));
  draft->mutable_tokens()->Assign(sequence.begin() + from, sequence.end());
  draft->set_num_tokens(k);
  SamplerConfigToProto(p_.sampler, draft->mutable_sampling());
  draft->set_output_start(static_cast<int32_t>(p_.sampler.output_start));
  // Positions the draft runs: the new tokens in one batch, then one step per further guess.
  const int64_t work = draft->tokens_size() + k - 1;
  const auto start = Clock::now();
  absl::StatusOr<v1::SessionResponse> response = s_.draft->Call(std::move(request), Timeout(work));
  out->wall_seconds = SecondsSince(start);
  if (observer_.draft_call) observer_.draft_call(out->wall_seconds);
  if (p_.deadlines.draft_done) {
    p_.deadlines.draft_done(absl::FromChrono(Clock::now() - start), work, response.status());
  }
  RETURN_IF_ERROR(response.status());
  const v1::DraftResult& result = response->draft();
  out->compute_seconds = response->compute_seconds();
  out->tokens.clear();
  if (out->q.size() < static_cast<size_t>(result.guesses_size())) {
    out->q.resize(result.guesses_size());
  }
  for (int i = 0; i < result.guesses_size(); ++i) {
    out->tokens.push_back(result.guesses(i).token_id());
    out->q[i] = SparseFromProto(result.guesses(i).distribution());
  }
  // The draft ran the sequence and every guess but the last.
  s_.draft_known = length + std::max(0, result.guesses_size() - 1);
  return absl::OkStatus();
}

void WorkerDraft::Abandon() {
  s_.draft.reset();
  s_.draft_known = 0;
}

}  // namespace tandem
