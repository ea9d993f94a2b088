#include "services/coordinator/coordinator.h"

#include <chrono>
#include <random>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "glog/logging.h"
#include "services/coordinator/choices.h"
#include "services/coordinator/memory_pause.h"
#include "wire/tokenizer_wire.h"
#include "services/coordinator/reply_writer.h"
#include "services/coordinator/detokenize.h"          // #30 front
#include "services/coordinator/system_fingerprint.h"  // #30 front
#include "services/coordinator/session_eviction.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Outcome(const absl::Status& status) {
  if (status.ok()) return "ok";
  std::string name = absl::StatusCodeToString(status.code());
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// What every request is checked against and filled in from (validated_request.h).
// --- #30 front ---
// The settings that change outputs, for the system fingerprint (system_fingerprint.h).
std::vector<std::string> OutputSettings(const CoordinatorOptions& o) {
  return {absl::StrCat("max_tokens=", o.default_max_tokens),
          absl::StrCat("draft_tokens=", o.default_draft_tokens),
          absl::StrCat("adaptive_draft=", o.adaptive_draft),
          absl::StrCat("continue_tokens=", o.continue_tokens),
          absl::StrCat("ngram_fallback=", o.ngram_fallback),
          absl::StrCat("tool_call_format=", o.output_syntax.tool_call_format),
          absl::StrCat("reasoning_format=", o.output_syntax.reasoning_format)};
}
// --- end ---

GenerateSettings SettingsFor(const CoordinatorOptions& options, const v1::ModelInfo& target) {
  GenerateSettings settings;
  settings.limits = options.limits;
  settings.vocab_size = target.vocab_size();
  const auto& end_of_turn = target.special_tokens().end_of_turn_ids();
  settings.end_of_turn_ids.assign(end_of_turn.begin(), end_of_turn.end());
  settings.default_max_tokens = options.default_max_tokens;
  settings.default_draft_tokens = options.default_draft_tokens;
  settings.adaptive_draft = options.adaptive_draft;
  settings.continue_tokens = options.continue_tokens;
  settings.ngram_fallback = options.ngram_fallback;
  return settings;
}

// How the target's model writes tool calls and reasoning (its template and tokens decide, or
// the flags).
absl::StatusOr<OutputSyntax> SyntaxFor(const CoordinatorOptions& options,
                                       const v1::DescribeResponse& target,
                                       const std::vector<std::string>& token_bytes) {
  std::optional<Vocabulary> vocab;
  if (target.has_tokenizer()) {
    absl::StatusOr<Vocabulary> v = VocabularyFromProto(target.tokenizer());
    if (v.ok()) vocab = *std::move(v);
  }
  ASSIGN_OR_RETURN(OutputSyntax syntax,
                   ChooseOutputSyntax(options.output_syntax, target.model().chat_template(),
                                      vocab.has_value() ? &*vocab : nullptr, token_bytes));
  LOG(INFO) << "tool calls: " << toolcall::ToolCallFormatName(syntax.tool_format)
            << "; reasoning: " << toolcall::ReasoningFormatName(syntax.reasoning);
  return syntax;
}

}  // namespace

// Create(options, metrics): coordinator_discovery.cc.

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    const CoordinatorOptions& options, std::vector<std::unique_ptr<WorkerClient>> targets,
    std::vector<std::unique_ptr<WorkerClient>> drafts, CoordinatorMetrics* metrics) {
  if (targets.empty()) return absl::InvalidArgumentError("at least one --target is needed");
  if (options.continue_tokens < 0 ||
      options.continue_tokens > SpeculationLimits::kMaxContinueTokens) {
    return absl::InvalidArgumentError(absl::StrCat("--continue-tokens ", options.continue_tokens,
                                                   " is outside [0, ",
                                                   SpeculationLimits::kMaxContinueTokens, "]"));
  }
  if (options.default_draft_tokens < 1 ||
      options.default_draft_tokens > SpeculationLimits::kMaxDraftTokens) {
    return absl::InvalidArgumentError(absl::StrCat("--draft-tokens ", options.default_draft_tokens,
                                                   " is outside [1, ",
                                                   SpeculationLimits::kMaxDraftTokens, "]"));
  }
  RETURN_IF_ERROR(ValidateDraftDeadlineOptions(options.pool.draft_deadline));
  std::unique_ptr<Coordinator> c(new Coordinator(options, metrics));
  c->targets_ = std::make_unique<WorkerPool>(std::move(targets), options.pool);
  c->drafts_ = std::make_unique<WorkerPool>(std::move(drafts), options.pool);
  RETURN_IF_ERROR(c->Init());
  // The gateway's KV signal (tandem_kv_cache_usage_ratio), at every round of probes.
  c->targets_->SetProbeListener([m = c->metrics_, targets = c->targets_.get()] {
    m->kv_cache_usage.Set(targets->KvUsage());
  });
  c->targets_->StartWatching();
  c->drafts_->StartWatching();
  return c;
}

Coordinator::~Coordinator() {
  if (targets_ != nullptr) targets_->SetProbeListener(nullptr);
  if (targets_ != nullptr) targets_->StopDiscovery();
  if (drafts_ != nullptr) drafts_->StopDiscovery();
}

absl::Status Coordinator::Init() {
  ASSIGN_OR_RETURN(v1::DescribeResponse target,
                   targets_->client(0).WaitReady(/*include_vocabulary=*/true, options_.worker_wait,
                                                 /*include_tokenizer=*/true));
  target_info_ = target.model();
  if (options_.local_tokenizer) InitLocalTokenizer(target);
  // Replicas found later serve the same vocabulary, or are not used.
  targets_->SetRequiredFingerprint(target_info_.vocabulary_fingerprint());
  drafts_->SetRequiredFingerprint(target_info_.vocabulary_fingerprint());
  int target_sessions = std::max(1, target.max_sessions());
  AddReplicaKv(target, /*first=*/true, &kv_budget_);
  token_bytes_.assign(target.vocabulary().token_bytes().begin(),
                      target.vocabulary().token_bytes().end());
  ASSIGN_OR_RETURN(OutputSyntax syntax, SyntaxFor(options_, target, token_bytes_));
  // The workers' constraints see control tokens by their text (a family's call marker may be
  // one); the coordinator's, which finds forced tokens, must see what they see.
  constraints_ = std::make_unique<ConstraintCompiler>(ConstraintCompiler::TokenBytes(target));
  for (size_t i = 1; i < targets_->size(); ++i) {
    ASSIGN_OR_RETURN(v1::DescribeResponse other,
                     targets_->client(i).WaitReady(false, options_.worker_wait));
    if (other.model().vocabulary_fingerprint() != target_info_.vocabulary_fingerprint()) {
      return absl::FailedPreconditionError(
          absl::StrCat("target replica ", targets_->client(i).address(), " (", other.model().name(),
                       ") serves another vocabulary than ", targets_->client(0).address()));
    }
    target_sessions += std::max(1, other.max_sessions());
    AddReplicaKv(other, /*first=*/false, &kv_budget_);
  }
  // Never more requests at once than the targets hold sessions: the rest queue.
  admission_ = std::make_unique<AdmissionQueue>(
      target_sessions, options_.max_queued_requests,
      [this](int waiting) { metrics_->queued_requests.Set(waiting); });
  // And never more than the targets' KV blocks hold at the most each request may need.
  admission_->SetKvCapacity(kv_budget_.total);
  if (kv_budget_.bounded()) {
    LOG(INFO) << "the targets' KV budgets hold " << kv_budget_.total.global
              << " blocks of 16 positions: requests are admitted while they fit";
  }
  options_.limits.max_prompt_tokens = target_info_.context_size();
  generate_settings_ = SettingsFor(options_, target_info_);
  generate_settings_.syntax = std::move(syntax);
  for (size_t i = 0; i < drafts_->size(); ++i) {
    WorkerClient* draft = &drafts_->client(i);
    ASSIGN_OR_RETURN(v1::DescribeResponse d, draft->WaitReady(false, options_.worker_wait));
    if (d.model().vocabulary_fingerprint() != target_info_.vocabulary_fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "draft model '", d.model().name(), "' (", d.model().path(), " at ", draft->address(),
          ", vocabulary ", d.model().vocabulary_fingerprint(), ") does not share the target '",
          target_info_.name(), "' (", target_info_.path(), ", vocabulary ",
          target_info_.vocabulary_fingerprint(), ")'s vocabulary"));
    }
    draft_info_ = d.model();
  }
  // --- #30 front ---
  const v1::DescribeModelResponse described = Describe();
  system_fingerprint_ =
      SystemFingerprint(described.target(), described.has_draft() ? &described.draft() : nullptr,
                        described.version(), OutputSettings(options_));
  // --- end ---
  return absl::OkStatus();
}

void Coordinator::InitLocalTokenizer(const v1::DescribeResponse& target) {
  absl::StatusOr<LocalTokenizer> local = LocalTokenizer::Create(target);
  if (!local.ok()) {
    LOG(WARNING) << "prompts are tokenized on the target workers (a Tokenize call each): "
                 << local.status().message();
    return;
  }
  local_tokenizer_.emplace(*std::move(local));
  targets_->WatchTokenizer(local_tokenizer_->fingerprint());  // every replica must match it
  LOG(INFO) << "prompts are tokenized in the coordinator (tokenizer "
            << local_tokenizer_->fingerprint() << " of '" << target.model().name() << "')";
}

bool Coordinator::tokenizes_locally() const {
  return local_tokenizer_.has_value() && !targets_->tokenizer_mismatch();
}

v1::DescribeModelResponse Coordinator::Describe() const {
  v1::DescribeModelResponse response;
  *response.mutable_target() = target_info_;
  if (draft_info_.has_value()) *response.mutable_draft() = *draft_info_;
  response.mutable_target()->clear_path();  // the file path stays in the coordinator
  if (response.has_draft()) response.mutable_draft()->clear_path();
  response.set_default_draft_tokens(options_.default_draft_tokens);
  response.set_version("0.1.0");
  // --- #30 front ---
  for (const std::string& name : options_.served_model_names) response.add_served_model_names(name);
  if (options_.served_model_names.empty()) response.add_served_model_names(target_info_.name());
  response.set_system_fingerprint(system_fingerprint_);
  // --- end ---
  return response;
}

// --- #30 front ---
absl::StatusOr<v1::DetokenizeResponse> Coordinator::Detokenize(
    const v1::DetokenizeRequest& request) const {
  return tandem::Detokenize(request, token_bytes_,
                            static_cast<size_t>(std::max(1, target_info_.context_size())));
}
// --- end ---

std::vector<std::pair<std::string, std::string>> Coordinator::Redactions() const {
  std::vector<std::pair<std::string, std::string>> r;
  for (size_t i = 0; i < targets_->size(); ++i) {
    r.emplace_back(targets_->client(i).address(), absl::StrCat("target-", i));
  }
  for (size_t i = 0; i < drafts_->size(); ++i) {
    r.emplace_back(drafts_->client(i).address(), absl::StrCat("draft-", i));
  }
  r.emplace_back(target_info_.path(), absl::StrCat("'", target_info_.name(), "'"));
  if (draft_info_.has_value()) {
    r.emplace_back(draft_info_->path(), absl::StrCat("'", draft_info_->name(), "'"));
  }
  return r;
}

absl::StatusOr<v1::TokenizeResponse> Coordinator::Tokenize(const v1::TokenizeRequest& request) {
  RETURN_IF_ERROR(CheckTokenizeLimits(request, options_.limits));
  if (tokenizes_locally()) return local_tokenizer_->Tokenize(request);
  // The least-loaded ready target; a failing one makes way for another, or for its restart.
  absl::StatusOr<v1::TokenizeResponse> response;
  absl::Status status = targets_->OnReady(absl::Now() + options_.failover_wait, [&](size_t i) {
    response = targets_->client(i).Tokenize(request, options_.target_timeout);
    return response.status();
  });
  if (!status.ok()) return status;
  return response;
}

void Coordinator::SetHealthListener(std::function<void(bool serving)> listener) {
  targets_->SetListener(std::move(listener));
}

int Coordinator::active_sessions() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(sessions_.size()) + oneoff_running_;
}

void Coordinator::CountOneOff(int delta) {
  absl::MutexLock lock(&mutex_);
  oneoff_running_ += delta;
  UpdateSessionGauge();
}

void Coordinator::UpdateSessionGauge() const {
  metrics_->active_sessions.Set(static_cast<double>(sessions_.size() + oneoff_running_));
}

std::vector<std::shared_ptr<Coordinator::Session>> Coordinator::EvictLocked(size_t keep) {
  const absl::Time now = absl::Now();
  std::vector<SessionUse> uses;
  for (const auto& [id, session] : sessions_) {
    const bool idle = session->mutex.try_lock();
    if (idle) session->mutex.unlock();
    uses.push_back({id, absl::FromUnixNanos(session->last_used_ns), !idle});
  }
  std::vector<std::shared_ptr<Session>> evicted;
  for (const std::string& id : SessionsToEvict(uses, keep, now - options_.session_idle)) {
    auto it = sessions_.find(id);
    evicted.push_back(std::move(it->second));
    sessions_.erase(it);
  }
  UpdateSessionGauge();
  return evicted;
}

absl::Status Coordinator::CloseSession(const std::string& session_id) {
  RETURN_IF_ERROR(CheckSessionIdLimit(session_id, options_.limits));
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mutex_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end()) {
      return absl::NotFoundError(absl::StrCat("no session '", session_id, "'"));
    }
    session = std::move(it->second);
    sessions_.erase(it);
    UpdateSessionGauge();
  }
  std::lock_guard<std::mutex> wait_for_request(session->mutex);
  return absl::OkStatus();  // the streams close with the session: workers free the caches
}

absl::StatusOr<std::shared_ptr<Coordinator::Session>> Coordinator::NewSession(
    const std::string& id) {
  auto session = std::make_shared<Session>();
  session->workers.context_size = target_info_.context_size();
  // The least-loaded ready target (waiting a while for one that is restarting).
  ASSIGN_OR_RETURN(
      session->workers.target,
      targets_->AttachReady(id, target_info_.context_size(), absl::Now() + options_.failover_wait,
                            options_.target_timeout, &session->target_lease));
  VLOG(1) << "session " << id << " attached to target "
          << targets_->client(session->target_lease.index()).address();
  return session;  // Generate attaches a draft when the request speculates
}

absl::StatusOr<std::shared_ptr<Coordinator::Session>> Coordinator::FindOrCreate(
    const v1::GenerateRequest& request, std::string* id) {
  const int64_t now = absl::ToUnixNanos(absl::Now());
  absl::ReleasableMutexLock closing(&detach_mutex_);  // until what is taken here is closed
  std::vector<std::shared_ptr<Session>> evicted;  // closed after the lock is released
  std::vector<std::unique_ptr<WorkerStream>> detached;
  if (!request.session_id().empty()) {
    *id = request.session_id();
    absl::MutexLock lock(&mutex_);
    auto it = sessions_.find(*id);
    if (it != sessions_.end()) {
      it->second->last_used_ns = now;
      std::shared_ptr<Session> found = it->second;
      evicted = EvictLocked(sessions_.size());  // the idle-timeout sweep only
      return found;
    }
    if (request.require_existing_session()) {
      return absl::NotFoundError(absl::StrCat("no session '", *id, "'"));
    }
    // Room for one more: forget expired sessions, then the least recently used idle one.
    evicted = EvictLocked(static_cast<size_t>(std::max(options_.max_sessions - 1, 0)));
    if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the coordinator holds its maximum of ", options_.max_sessions,
                       " named sessions (--max-sessions) and every one has a request running"));
    }
    detached = DetachIdleLocked(nullptr);
  } else {
    *id = absl::StrCat("oneoff-", next_session_++);
    absl::MutexLock lock(&mutex_);
    detached = DetachIdleLocked(nullptr);
  }
  // Close those streams first, so the workers have a free slot for this session's.
  evicted.clear();
  detached.clear();
  closing.Release();
  ASSIGN_OR_RETURN(std::shared_ptr<Session> session, NewSession(*id));
  session->last_used_ns = now;
  if (!request.session_id().empty()) {
    absl::MutexLock lock(&mutex_);
    auto [it, inserted] = sessions_.emplace(*id, session);
    UpdateSessionGauge();
    return it->second;  // a concurrent request may have made it first
  }
  return session;
}

std::vector<std::unique_ptr<WorkerStream>> Coordinator::DetachIdleLocked(const Session* mine) {
  // Streams on the targets: one per admitted request, plus those of idle named sessions.
  // Those may hold what the admitted ones leave free; beyond, the least recently used idle
  // sessions let go of their streams (history kept: the next request re-fills the caches).
  const size_t room =
      static_cast<size_t>(std::max(0, admission_->capacity() - admission_->running()));
  std::vector<SessionUse> holders;
  for (const auto& [id, session] : sessions_) {
    if (session.get() == mine || !session->mutex.try_lock()) continue;  // a request runs on it
    if (session->workers.target != nullptr) {
      holders.push_back({id, absl::FromUnixNanos(session->last_used_ns), false});
    }
    session->mutex.unlock();
  }
  std::vector<std::unique_ptr<WorkerStream>> detached;
  for (const std::string& id : SessionsToEvict(holders, room, absl::InfinitePast())) {
    Session& session = *sessions_[id];
    if (!session.mutex.try_lock()) continue;  // a request took it meanwhile
    detached.push_back(std::move(session.workers.target));
    detached.push_back(std::move(session.workers.draft));
    session.target_lease.Release();
    session.draft_lease.Release();
    session.workers.target_known = 0;
    session.workers.draft_known = 0;
    session.workers.target_constrained = false;  // new streams hold no constraint
    session.workers.draft_constrained = false;
    session.mutex.unlock();
  }
  return detached;
}

absl::Status Coordinator::ReattachTarget(Session& session, const std::string& id) {
  if (session.workers.target != nullptr) return absl::OkStatus();
  {
    absl::MutexLock closing(&detach_mutex_);
    std::vector<std::unique_ptr<WorkerStream>> detached;
    {
      absl::MutexLock lock(&mutex_);
      detached = DetachIdleLocked(&session);
    }
    detached.clear();
  }
  // The least-loaded ready target, as for a new session.
  ASSIGN_OR_RETURN(
      session.workers.target,
      targets_->AttachReady(id, target_info_.context_size(), absl::Now() + options_.failover_wait,
                            options_.target_timeout, &session.target_lease));
  session.workers.target_known = 0;  // re-filled from the history
  return absl::OkStatus();
}

// --- #30 n choices ---
absl::Status Coordinator::Generate(const v1::GenerateRequest& request,
                                   const std::function<bool(const v1::GenerateResponse&)>& write,
                                   const std::function<bool()>& cancelled, absl::Time deadline) {
  if (absl::Status checked = CheckChoices(request, options_.limits); !checked.ok()) {
    metrics_->Requests(Outcome(checked)).Increment();
    return checked;
  }
  if (ChoiceCount(request) == 1) return GenerateOne(request, write, cancelled, deadline);
  deadline = std::min(deadline, absl::Now() + options_.max_request_time);
  return GenerateChoices(
      request, std::random_device()(),
      [&](const v1::GenerateRequest& one, const ChoiceWrite& w, const ChoiceCancelled& c) {
        return GenerateOne(one, w, c, deadline);
      },
      write, cancelled);
}
// --- end ---

absl::Status Coordinator::GenerateOne(const v1::GenerateRequest& request,
                                      const std::function<bool(const v1::GenerateResponse&)>& write,
                                      const std::function<bool()>& cancelled, absl::Time deadline) {
  const auto start = Clock::now();
  deadline = std::min(deadline, absl::Now() + options_.max_request_time);
  absl::Status status = [&]() -> absl::Status {
    // Validate before any worker does anything; an unset seed takes a fresh random one.
    ASSIGN_OR_RETURN(ValidatedRequest valid,
                     ValidateGenerateRequest(request, generate_settings_, std::random_device()(),
                                             [this](const v1::TokenizeRequest& tokenize) {
                                               return Tokenize(tokenize);
                                             }));
    // A constraint that does not compile is refused before any worker call; the compiled
    // state finds the tokens it forces.
    std::unique_ptr<TokenConstraint> constraint;
    if (!valid.constraint.empty()) {
      ASSIGN_OR_RETURN(constraint, constraints_->New(valid.constraint, valid.rounds.stop_ids));
      metrics_->ConstrainedRequests(std::string(ConstraintKindName(valid.constraint.kind)))
          .Increment();
      valid.rounds.constraint = std::move(valid.constraint);
      valid.rounds.constraint_start = static_cast<int64_t>(valid.rounds.context.size());
      valid.rounds.forced_tokens = constraint.get();
    }
    // The KV blocks it may need: refused now if no target could ever hold them.
    ASSIGN_OR_RETURN(const KvBlockDemand kv_blocks,
                     KvReservation(valid.rounds, target_info_.context_size(), kv_budget_));
    // Wait for a free slot (the targets' sessions) and room in their KV budgets, within the
    // deadline: once running, its cache can always grow.
    ASSIGN_OR_RETURN(AdmissionQueue::Ticket admitted,
                     admission_->Admit(std::min(deadline, absl::Now() + options_.max_queue_wait),
                                       cancelled, kv_blocks));
    metrics_->running_requests.Increment();
    auto finished = absl::MakeCleanup([&] { metrics_->running_requests.Decrement(); });
    std::string session_id;
    ASSIGN_OR_RETURN(std::shared_ptr<Session> session, FindOrCreate(request, &session_id));
    const bool oneoff = request.session_id().empty();
    if (oneoff) CountOneOff(+1);
    auto uncount = absl::MakeCleanup([&] {
      if (oneoff) CountOneOff(-1);
    });
    std::unique_lock<std::mutex> lock(session->mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      return absl::AbortedError(absl::StrCat("session '", session_id, "' is busy with a request"));
    }
    auto touch = absl::MakeCleanup([&] { session->last_used_ns = absl::ToUnixNanos(absl::Now()); });
    ASSIGN_OR_RETURN(const bool draft_lost,
                     PrepareWorkers(session_id, *session, valid.rounds, deadline));
    // #30 front: the final result carries the system fingerprint.
    const ReplyWriter::Write stamped = [&](const v1::GenerateResponse& message) {
      if (!message.has_final()) return write(message);
      v1::GenerateResponse copy = message;
      copy.mutable_final()->set_system_fingerprint(system_fingerprint_);
      return write(copy);
    };
    ReplyWriter reply({&token_bytes_, std::move(valid.stop_strings), valid.rounds.logprobs, start,
                       valid.parsing, &generate_settings_.syntax.parse_token_bytes},
                      stamped, cancelled, metrics_);
    absl::StatusOr<RoundOutcome> outcome =
        RunRounds(session_id, *session, valid.rounds, draft_lost, reply, deadline, cancelled);
    if (!outcome.ok() || reply.client_gone()) {
      lock.unlock();  // CloseSession waits for the session's request: this one
      if (!oneoff) CloseSession(session_id).IgnoreError();  // frees both workers' caches
      if (reply.client_gone()) return absl::CancelledError("the client went away");
      return outcome.status();
    }
    reply.Finish(*outcome, session_id, valid.rounds.sampler.seed);
    return absl::OkStatus();
  }();
  metrics_->request_duration.Observe(SecondsSince(start));
  metrics_->Requests(Outcome(status)).Increment();
  return status;
}

absl::StatusOr<bool> Coordinator::PrepareWorkers(const std::string& id, Session& session,
                                                 RoundParams& params, absl::Time request_deadline) {
  RETURN_IF_ERROR(ReattachTarget(session, id));  // its streams were let go while idle
  // A session that lost its draft (a failure, or the worker closed an idle stream) gets a
  // fresh one for this request; its cache is re-filled from the history.
  bool draft_lost = false;  // a draft was tried and did not answer
  if (params.speculate && !params.ngram && NeedsDraft(session)) {
    draft_lost = !AttachDraft(id, session);
  }
  CancelIfTargetDown(session);
  params.deadlines = Deadlines(session, request_deadline);
  return draft_lost;
}

absl::StatusOr<RoundOutcome> Coordinator::RunRounds(const std::string& id, Session& session,
                                                    const RoundParams& params, bool draft_lost,
                                                    ReplyWriter& reply, absl::Time request_deadline,
                                                    const std::function<bool()>& cancelled) {
  RoundObserver observer;
  observer.draft_call = [this](double s) { metrics_->draft_call.Observe(s); };
  observer.verify_call = [this](double s) { metrics_->verify_call.Observe(s); };
  observer.draft_failed = [this, &id] {
    LOG(WARNING) << "session " << id << ": draft dropped, going on with the target alone";
    metrics_->draft_failures.Increment();
  };
  observer.round_tokens = [this](int32_t n) { metrics_->tokens_per_round.Observe(n); };
  observer.verified = [&reply](const v1::VerifyResult& v) { reply.Verified(v); };
  int failovers = 0;
  ReopenTarget reopen = [&](const absl::Status& failure) {
    return Reopen(id, session, failure, request_deadline, ++failovers);
  };
  RoundCallback on_tokens = [&reply](std::vector<int32_t>& tokens) { return reply.Tokens(tokens); };
  // Memory the target runs short of after the first token pauses the request, which then
  // resumes from its history (memory_pause.h).
  MemoryPause pause;
  pause.deadline = request_deadline;
  pause.without_progress = options_.failover_wait;
  pause.stop = [&] { return reply.client_gone() || (cancelled && cancelled()); };
  pause.on_pause = [&id](int64_t generated, absl::Duration wait, const absl::Status& why) {
    LOG(WARNING) << "session " << id << ": target short of KV memory after " << generated
                 << " tokens; resuming in " << absl::FormatDuration(wait) << ": " << why.message();
  };
  absl::StatusOr<RoundOutcome> outcome =
      RunPausingForMemory(session.workers, params, on_tokens, reopen, observer, pause);
  if (outcome.ok() && draft_lost) outcome->speculation.set_draft_failed(true);
  return outcome;
}

}  // namespace tandem
