#include "workers/worker_engine.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/observed_constraint.h"
#include "core/chat/model_chat_template.h"
#include "core/decoder/kv_cache.h"
#include "core/generation/speculation_defaults.h"
#include "core/tokenizer/tokenizer_fingerprint.h"
#include "core/tokenizer/tokenizer_loader.h"

namespace tandem {
namespace {

// The most guesses one draft or verify request may carry (worker.proto).
constexpr int32_t kMaxGuesses = SpeculationLimits::kWorkerMaxGuesses;
static_assert(KvCache::kRingSlack >= kMaxGuesses,
              "a sliding-window cache must keep the positions a rejected round rolls back over");

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A session's forward passes during one request, through the scheduler.
class ScheduledRunner : public ForwardRunner {
 public:
  ScheduledRunner(BatchScheduler& scheduler, const std::vector<int32_t>& history,
                  std::vector<float>& logits)
      : scheduler_(scheduler), history_(history), logits_(logits) {}

  absl::StatusOr<absl::Span<const float>> Forward(KvCache& cache, absl::Span<const int32_t> tokens,
                                                  int64_t start, LogitsMode mode) override {
    BatchScheduler::Work work;
    work.cache = &cache;
    work.history = &history_;
    work.tokens = tokens;
    work.start = start;
    work.mode = mode;
    work.logits = &logits_;
    RETURN_IF_ERROR(scheduler_.Run(work));
    queue_seconds_ += work.queue_seconds;
    adopted_ += work.adopted;
    return absl::MakeConstSpan(logits_);
  }

  double queue_seconds() const { return queue_seconds_; }
  int64_t adopted() const { return adopted_; }

 private:
  BatchScheduler& scheduler_;
  const std::vector<int32_t>& history_;  // the session's cached tokens: [0, start) at a call
  std::vector<float>& logits_;
  double queue_seconds_ = 0;
  int64_t adopted_ = 0;
};

}  // namespace

absl::string_view WorkerRoleName(WorkerRole role) {
  return role == WorkerRole::kDraft ? "draft" : "target";
}

absl::StatusOr<std::unique_ptr<WorkerEngine>> WorkerEngine::Create(const WorkerOptions& options) {
  if (options.threads < 1 || options.max_sessions < 1 || options.context_size < 0 ||
      options.kv_budget_bytes < 0) {
    return absl::InvalidArgumentError(
        "worker options: threads and max_sessions must be >= 1, context and KV budget >= 0");
  }
  if (options.threads > kMaxPoolThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker options: threads ", options.threads, " exceeds ", kMaxPoolThreads));
  }
  std::unique_ptr<WorkerEngine> engine(new WorkerEngine());
  engine->options_ = options;
  ASSIGN_OR_RETURN(engine->model_, Model::Load(options.model_path, options.model_load));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, LoadTokenizer(options.model_path));
  engine->tokenizer_.emplace(std::move(tokenizer));
  ASSIGN_OR_RETURN(engine->chat_template_, chat::ModelChatTemplate(options.model_path));
  engine->tokenizer_fingerprint_ =
      TokenizerFingerprint(engine->tokenizer_->vocabulary(), engine->chat_template_);
  engine->constraints_ = std::make_unique<ConstraintCompiler>(
      ConstraintCompiler::TokenBytes(*engine->tokenizer_), options.constraints);
  const int64_t model_context = engine->model_->config().context_length;
  engine->context_size_ =
      options.context_size == 0 ? model_context : std::min(options.context_size, model_context);
  engine->pool_ = std::make_unique<ThreadPool>(options.threads);
  engine->decoder_ = std::make_unique<Decoder>(*engine->model_, *engine->pool_);
  // Global layers' blocks and sliding layers' rings, each pool its share of the budget.
  ASSIGN_OR_RETURN(engine->kv_memory_,
                   KvMemory::Create(engine->decoder_->CacheShape(engine->context_size_),
                                    options.kv_type, options.kv_budget_bytes));
  WorkerEngine* raw = engine.get();
  engine->scheduler_ = std::make_unique<BatchScheduler>(
      *engine->decoder_, options.scheduler,
      [raw](const KvBlockDemand& blocks) { return raw->ReclaimBlocks(blocks); },
      options.step_observer);
  return engine;
}

WorkerEngine::~WorkerEngine() {
  if (scheduler_ != nullptr) scheduler_->Close();
}

absl::StatusOr<int64_t> WorkerEngine::OpenSession(int64_t context_size,
                                                  std::vector<int64_t>* evicted) {
  if (context_size < 0 || context_size > context_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("context size ", context_size, " is outside [0, ", context_size_, "]"));
  }
  if (context_size == 0) context_size = context_size_;
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, KvCache::CreatePaged(*kv_memory_, context_size));
  absl::MutexLock lock(&mutex_);
  RETURN_IF_ERROR(MakeRoomLocked(evicted));
  auto session = std::make_shared<SessionState>();
  session->state.cache = std::move(cache);
  session->last_use = ++use_clock_;
  const int64_t id = next_session_++;
  sessions_[id] = std::move(session);
  return id;
}

absl::Status WorkerEngine::MakeRoomLocked(std::vector<int64_t>* evicted) {
  while (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
    auto victim = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (!it->second->busy &&
          (victim == sessions_.end() || it->second->last_use < victim->second->last_use)) {
        victim = it;
      }
    }
    if (victim == sessions_.end()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the worker holds its maximum of ", options_.max_sessions,
                       " sessions and every one has a request in flight"));
    }
    evicted_.insert(victim->first);
    if (evicted != nullptr) evicted->push_back(victim->first);
    sessions_.erase(victim);  // a request still holding it keeps its own reference
  }
  return absl::OkStatus();
}

bool WorkerEngine::ReclaimBlocks(const KvBlockDemand& blocks) {
  absl::MutexLock lock(&mutex_);
  while (!kv_memory_->CanAllocate(blocks)) {
    SessionState* victim = nullptr;
    for (auto& [id, session] : sessions_) {
      if (!session->busy && session->state.cache->blocks_held() > 0 &&
          (victim == nullptr || session->last_use < victim->last_use)) {
        victim = session.get();
      }
    }
    if (victim == nullptr) return false;
    // Idle: no thread uses its cache. Its tokens stay in `history` for the next request.
    victim->state.cache->Release();
    victim->state.cached.clear();
    ++preemptions_;
    if (options_.on_preemption != nullptr) options_.on_preemption();
  }
  return true;
}

WorkerEngine::KvCapacity WorkerEngine::kv_capacity() const {
  KvCapacity capacity;
  if (options_.kv_budget_bytes == 0) return capacity;  // no bound
  capacity.global_blocks = kv_memory_->global() != nullptr ? kv_memory_->global()->max_blocks() : 0;
  if (kv_memory_->sliding() != nullptr) {
    capacity.sliding_blocks = kv_memory_->sliding()->max_blocks();
    capacity.ring_blocks = KvCache::RingBlocks(kv_memory_->shape());
  }
  return capacity;
}

int64_t WorkerEngine::preemptions() const {
  absl::MutexLock lock(&mutex_);
  return preemptions_;
}

void WorkerEngine::CloseSession(int64_t session) {
  std::shared_ptr<SessionState> closed;
  {
    absl::MutexLock lock(&mutex_);
    evicted_.erase(session);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    closed = std::move(it->second);
    sessions_.erase(it);
  }
  // A request still running holds its own reference; the cache goes when it finishes.
}

int WorkerEngine::active_sessions() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(sessions_.size());
}

int64_t WorkerEngine::kv_bytes_in_use() const { return kv_memory_->bytes_in_use(); }

absl::StatusOr<std::vector<int32_t>> WorkerEngine::Sequence(
    const SessionState& session, int64_t position, absl::Span<const int32_t> tokens) const {
  const int64_t cached = static_cast<int64_t>(session.history.size());
  if (position < 0 || position > cached) {
    return absl::InvalidArgumentError(absl::StrCat("position ", position, " is outside [0, ",
                                                   cached, "], the tokens this session holds"));
  }
  const int64_t vocab = model_->config().vocab_size;
  // A draft may be up to 128 ids smaller than the target: target tokens it lacks run as
  // kDraftStandIn (speculative_round.h), exactly as in-process speculation does.
  const int64_t accepted = options_.role == WorkerRole::kDraft ? vocab + 128 : vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= accepted) {
      return absl::InvalidArgumentError(absl::StrCat("token ", tokens[i], " at index ", i,
                                                     " is outside the vocabulary of ", vocab));
    }
  }
  if (position + static_cast<int64_t>(tokens.size()) > session.state.cache->shape().context_size) {
    return absl::OutOfRangeError(absl::StrCat(
        "the session's context of ", session.state.cache->shape().context_size, " tokens is full"));
  }
  std::vector<int32_t> sequence(session.history.begin(), session.history.begin() + position);
  std::vector<int32_t> mapped;
  ToDraftVocabulary(tokens, vocab, &mapped);
  sequence.insert(sequence.end(), mapped.begin(), mapped.end());
  return sequence;
}

absl::StatusOr<std::shared_ptr<WorkerEngine::SessionState>> WorkerEngine::CheckOut(int64_t id) {
  absl::MutexLock lock(&mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() && evicted_.contains(id)) {
    return absl::UnavailableError(
        absl::StrCat("session ", id,
                     " was evicted (least recently used) to make room for another; "
                     "attach again and re-sync from position 0"));
  }
  if (it == sessions_.end()) return absl::NotFoundError(absl::StrCat("no session ", id));
  if (it->second->busy) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", id, " already has a request in flight"));
  }
  it->second->busy = true;
  it->second->last_use = ++use_clock_;
  return it->second;
}

void WorkerEngine::CheckIn(SessionState& session) {
  absl::MutexLock lock(&mutex_);
  session.busy = false;
  session.last_use = ++use_clock_;
}

absl::Status WorkerEngine::RunOnSession(
    int64_t id, const std::function<absl::Status(SessionState&, ForwardRunner&)>& work,
    WorkTiming* timing) {
  ASSIGN_OR_RETURN(std::shared_ptr<SessionState> session, CheckOut(id));
  const auto start = std::chrono::steady_clock::now();
  ScheduledRunner runner(*scheduler_, session->state.cached, session->logits);
  absl::Status status = work(*session, runner);
  // What the session now holds; a failed request leaves the tokens synced before it.
  if (status.ok()) session->history = session->state.cached;
  if (timing != nullptr) {
    timing->queue_seconds = runner.queue_seconds();
    timing->compute_seconds = std::max(0.0, SecondsSince(start) - runner.queue_seconds());
    timing->shared_prefix_tokens = runner.adopted();
  }
  CheckIn(*session);
  return status;
}

absl::Status WorkerEngine::Constrain(int64_t id, const ConstraintSpec& spec, int64_t start,
                                     absl::Span<const int32_t> end_ids) {
  // Compiled before the session is checked out (compiled constraints are cached by content).
  absl::StatusOr<std::unique_ptr<TokenConstraint>> constraint = nullptr;  // kNone: cleared
  if (start < 0) {
    constraint = absl::InvalidArgumentError(absl::StrCat("start_position ", start, " < 0"));
  } else if (!spec.empty()) {
    constraint = constraints_->New(spec, end_ids);
    if (constraint.ok() && options_.mask_observer) {
      constraint = std::make_unique<ObservedConstraint>(*std::move(constraint),
                                                        options_.mask_observer);
    }
  }
  ASSIGN_OR_RETURN(std::shared_ptr<SessionState> session, CheckOut(id));
  // No forward pass: the cache and the history stay as they are.
  session->constraint = constraint.ok() ? *std::move(constraint) : nullptr;
  session->constraint_start = start;
  CheckIn(*session);
  return constraint.status();
}

absl::StatusOr<int64_t> WorkerEngine::Sync(int64_t session, int64_t position,
                                           absl::Span<const int32_t> tokens, WorkTiming* timing,
                                           int64_t* reused) {
  int64_t cached = 0, run_reused = 0;
  WorkTiming own_timing;
  if (timing == nullptr) timing = &own_timing;
  RETURN_IF_ERROR(RunOnSession(
      session,
      [&](SessionState& s, ForwardRunner& runner) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<int32_t> sequence, Sequence(s, position, tokens));
        ASSIGN_OR_RETURN(RunOutput run,
                         RunTokens(runner, s.state, sequence, sequence.size(), LogitsMode::kNone));
        cached = static_cast<int64_t>(s.state.cached.size());
        run_reused = run.reused;
        return absl::OkStatus();
      },
      timing));
  // Reused: from this session's own cache, or from blocks other sessions computed.
  if (reused != nullptr) *reused = run_reused + timing->shared_prefix_tokens;
  return cached;
}

absl::StatusOr<DraftOutput> WorkerEngine::Draft(int64_t session, int64_t position,
                                                absl::Span<const int32_t> tokens, int32_t k,
                                                const SamplerConfig& config, WorkTiming* timing) {
  if (k < 1 || k > kMaxGuesses) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft tokens ", k, " is outside [1, ", kMaxGuesses, "]"));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError("a draft request needs at least the pending token");
  }
  ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(config, model_->config().vocab_size));
  DraftOutput out;
  RETURN_IF_ERROR(RunOnSession(
      session,
      [&](SessionState& s, ForwardRunner& runner) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<int32_t> sequence, Sequence(s, position, tokens));
        // Guesses need room: never draft past the context.
        const int64_t room =
            s.state.cache->shape().context_size - static_cast<int64_t>(sequence.size());
        const int32_t guesses = static_cast<int32_t>(std::min<int64_t>(k, room));
        if (guesses <= 0) return absl::OkStatus();
        return DraftGuesses(runner, s.state, sampler, sequence, guesses, config.seed, &out.guesses,
                            &out.q, s.constrained());
      },
      timing));
  out.q.resize(out.guesses.size());
  // Gumbel coupling's verify reads only the guessed ids: q stays off the wire.
  if (config.coupling == Coupling::kGumbel) {
    for (SparseDistribution& q : out.q) q = SparseDistribution();
  }
  return out;
}

absl::StatusOr<AcceptanceResult> WorkerEngine::Verify(
    int64_t session, int64_t position, absl::Span<const int32_t> tokens, int32_t pending,
    std::vector<int32_t> guesses, const std::vector<SparseDistribution>& q,
    const SamplerConfig& config, WorkTiming* timing, VerifyLogprobs* logprobs,
    int32_t continue_tokens, std::vector<int32_t>* continued) {
  const int64_t vocab = model_->config().vocab_size;
  if (guesses.size() > static_cast<size_t>(kMaxGuesses)) {
    return absl::InvalidArgumentError(
        absl::StrCat(guesses.size(), " guesses (at most ", kMaxGuesses, ")"));
  }
  if (logprobs != nullptr && (logprobs->top < 0 || logprobs->top > kMaxTopLogprobs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_logprobs ", logprobs->top, " is outside [0, ", kMaxTopLogprobs, "]"));
  }
  if (continue_tokens < 0 || continue_tokens > SpeculationLimits::kMaxContinueTokens) {
    return absl::InvalidArgumentError(absl::StrCat("continue_tokens ", continue_tokens,
                                                   " is outside [0, ",
                                                   SpeculationLimits::kMaxContinueTokens, "]"));
  }
  if (continued != nullptr) continued->clear();
  const int32_t more =
      guesses.empty() && continued != nullptr && (logprobs == nullptr || !logprobs->wanted)
          ? static_cast<int32_t>(std::min<int64_t>(
                continue_tokens, scheduler_->last_step_sessions() / kSessionsPerContinuedToken))
          : 0;
  // The draft is not trusted: each q must be a distribution that could have drawn its guess
  // (Gumbel coupling reads no q: a guess is kept only if it is the target's own pick).
  std::vector<SparseDistribution> draft_q;
  if (config.coupling != Coupling::kGumbel) {
    ASSIGN_OR_RETURN(draft_q,
                     ValidateDraftDistributions(guesses, q, std::max<int64_t>(vocab, 1) + 128));
  }
  ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(config, vocab));
  std::vector<int32_t> with_pending(tokens.begin(), tokens.end());
  with_pending.push_back(pending);
  AcceptanceResult result;
  RETURN_IF_ERROR(RunOnSession(
      session,
      [&](SessionState& s, ForwardRunner& runner) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<int32_t> sequence, Sequence(s, position, with_pending));
        const int64_t room =
            s.state.cache->shape().context_size - static_cast<int64_t>(sequence.size());
        if (static_cast<int64_t>(guesses.size()) > room) guesses.resize(std::max<int64_t>(room, 0));
        ASSIGN_OR_RETURN(result,
                         VerifyGuesses(runner, s.state, sampler, sequence, &guesses, draft_q,
                                       config.seed, &s.verify_scratch, s.constrained()));
        if (logprobs != nullptr && logprobs->wanted) {
          logprobs->out.clear();
          for (int32_t i = 0; i <= result.accepted; ++i) {
            const int32_t token = i < result.accepted ? guesses[i] : result.next_token;
            logprobs->out.push_back(
                LogprobsOf(s.verify_scratch.rows.subspan(i * vocab, vocab), token, logprobs->top));
          }
        }
        if (more == 0) return absl::OkStatus();
        return ContinueAlone(runner, s.state, sampler, result.next_token, more, config.seed,
                             &s.verify_scratch, continued, s.constrained());
      },
      timing));
  return result;
}

// --- #30 embeddings ---
absl::StatusOr<EmbedOutput> WorkerEngine::Embed(absl::Span<const std::vector<int32_t>> inputs,
                                                Pooling pooling,
                                                const std::function<bool()>& cancelled) {
  EmbedLimits limits;
  limits.context_size = context_size_;
  limits.max_total_tokens = options_.max_embed_tokens;
  return EmbedOnScheduler(*scheduler_, *decoder_, options_.kv_type, limits, inputs, pooling,
                          cancelled);
}
// --- end ---

}  // namespace tandem
