// The model side of a worker, with no gRPC inside: one model, its tokenizer, the sessions'
// KV caches, and the draft and verify halves of the speculative round. Callers on RPC
// threads run their request's logic (sampling, acceptance) themselves and hand its forward
// passes to the worker's BatchScheduler, which runs the rows of all sessions' requests
// together, step by step; a caller blocks while its rows run.
//
// Sessions sync by position (worker.proto): a request names the absolute position its
// tokens start at; the session's sequence becomes cached[0, position) + tokens, and only what
// the cache lacks is run.
//
// Thread-safe.
#ifndef TANDEM_WORKERS_WORKER_ENGINE_H_
#define TANDEM_WORKERS_WORKER_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "core/generation/acceptance.h"
#include "core/generation/output_constraint.h"
#include "core/generation/sampler.h"
#include "core/generation/speculative_round.h"
#include "core/generation/token_logprobs.h"
#include "core/grammar/constraint_spec.h"
#include "core/kernels/thread_pool.h"
#include "core/tokenizer/tokenizer.h"
#include "wire/constraint_compiler.h"
#include "workers/batch_scheduler.h"
#include "workers/embed_work.h"

namespace tandem {

enum class WorkerRole { kDraft, kTarget };
absl::string_view WorkerRoleName(WorkerRole role);  // "draft" / "target"

struct WorkerOptions {
  WorkerRole role = WorkerRole::kTarget;
  std::string model_path;
  int threads = 2;
  KvType kv_type = KvType::kF16;
  int64_t context_size = 0;  // per session; 0: the model's context length
  int max_sessions = 64;
  int64_t kv_budget_bytes = 0;  // all sessions' caches together; 0: no limit
  SchedulerOptions scheduler;
  BatchScheduler::StepObserver step_observer;  // called after every scheduler step; may be null
  std::function<void()> on_preemption;    // an idle session's blocks were reclaimed; may be null
  ConstraintCompilerOptions constraints;  // compiled constraints and vocabularies kept
  // Called with the seconds of each token mask a constraint computes; may be null.
  std::function<void(double seconds)> mask_observer;
  // --- #30 embeddings ---
  Pooling pooling = Pooling::kMean;  // Embed's when the request names none (--pooling)
  int64_t max_embed_tokens = 65536;  // tokens of one Embed call's inputs together
  // --- end ---
  // --- #31 activations flags ---
  ModelLoadOptions model_load;  // how the model is loaded (--activations)
  // --- end ---
};

// Time a request spent, for SessionResponse.
struct WorkTiming {
  double queue_seconds = 0;
  double compute_seconds = 0;
  int64_t shared_prefix_tokens = 0;  // positions adopted from other sessions' blocks
};

// A verify's optional log-probabilities (token_logprobs.h): asked for with `wanted` and `top`
// alternatives per position (0..kMaxTopLogprobs), returned in `out`, one per emitted token
// (the kept guesses, then the next token), each from the raw logits row that predicted it.
struct VerifyLogprobs {
  bool wanted = false;
  int32_t top = 0;
  std::vector<TokenLogprobs> out;
};

struct DraftOutput {
  std::vector<int32_t> guesses;
  std::vector<SparseDistribution> q;
};

class WorkerEngine {
 public:
  // Loads the model and its tokenizer; the loaders' errors as is.
  static absl::StatusOr<std::unique_ptr<WorkerEngine>> Create(const WorkerOptions& options);
  ~WorkerEngine();

  const WorkerOptions& options() const { return options_; }
  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::optional<std::string>& chat_template() const { return chat_template_; }
  // TokenizerFingerprint of the tokenizer and chat template, computed once at load.
  const std::string& tokenizer_fingerprint() const { return tokenizer_fingerprint_; }
  int64_t context_size() const { return context_size_; }

  // A new session (`context_size` 0: the worker's) whose cache takes 16-position blocks from
  // the worker's pool as it grows (paged KV, bounded by kv_budget_bytes). At max_sessions the
  // least recently used idle session (no request in flight) is evicted to make room and its id
  // appended to `evicted`: its requests are then kUnavailable, so the coordinator re-attaches
  // and re-fills it from its history. kResourceExhausted when every session is busy;
  // kInvalidArgument for a context larger than the worker's.
  //
  // When the pool runs short, the scheduler preempts: the least recently used idle sessions'
  // blocks are freed, and the worker keeps their tokens, so a preempted session's next request
  // recomputes (or adopts shared blocks for) what it lost, transparently.
  absl::StatusOr<int64_t> OpenSession(int64_t context_size,
                                      std::vector<int64_t>* evicted = nullptr);
  // Frees an open or evicted session (unknown ids are ignored).
  void CloseSession(int64_t session);
  int active_sessions() const;
  int64_t kv_bytes_in_use() const;
  KvBlockPool::Stats kv_blocks() const { return kv_memory_->stats(); }
  // The KV budget in blocks of 16 positions: each pool's bound, and the most sliding blocks
  // one session holds (its ring; 0 when no layer slides). Unbounded: global_blocks 0.
  struct KvCapacity {
    int64_t global_blocks = 0;
    int64_t sliding_blocks = 0;
    int64_t ring_blocks = 0;
  };
  KvCapacity kv_capacity() const;
  // Idle sessions whose blocks were reclaimed so far.
  int64_t preemptions() const;
  // Requests with forward passes waiting or running in the scheduler now.
  int64_t queue_depth() const { return scheduler_->depth(); }

  // Brings the session to cached[0, position) + tokens; returns the cached length. `reused`,
  // when not null, receives how many leading tokens of that sequence the cache already held
  // (not run again).
  absl::StatusOr<int64_t> Sync(int64_t session, int64_t position, absl::Span<const int32_t> tokens,
                               WorkTiming* timing, int64_t* reused = nullptr);
  // Syncs to cached[0, position) + tokens (pending last), then drafts k guesses.
  absl::StatusOr<DraftOutput> Draft(int64_t session, int64_t position,
                                    absl::Span<const int32_t> tokens, int32_t k,
                                    const SamplerConfig& sampler, WorkTiming* timing);
  // Verifies `guesses` (with their q) after cached[0, position) + tokens + [pending]; fills
  // `logprobs->out` when `logprobs` asks (its `top` outside [0, 20]: kInvalidArgument). With
  // no guesses, no logprobs and `continue_tokens` > 0, the target then continues alone
  // (ContinueAlone) for up to that many more tokens into `continued` while other sessions
  // share its steps: one more token per kSessionsPerContinuedToken sessions in the last step,
  // so a lone session gets one token per call (each token streams at once) and a busy
  // worker's batch does not wait for every session's round trip between steps.
  absl::StatusOr<AcceptanceResult> Verify(
      int64_t session, int64_t position, absl::Span<const int32_t> tokens, int32_t pending,
      std::vector<int32_t> guesses, const std::vector<SparseDistribution>& q,
      const SamplerConfig& sampler, WorkTiming* timing, VerifyLogprobs* logprobs = nullptr,
      int32_t continue_tokens = 0, std::vector<int32_t>* continued = nullptr);
  static constexpr int64_t kSessionsPerContinuedToken = 4;

  // Sets the session's output constraint (ConstrainRequest): from now on every token its
  // drafts and verifies draw at an absolute position >= `start` is masked by `spec`, compiled
  // over this worker's tokenizer with `end_ids` as the tokens that end the output (ids outside
  // the vocabulary are dropped: a draft's may be smaller). kNone clears it. kInvalidArgument
  // naming the culprit when it does not compile, or for a negative start: the session then has
  // no constraint. kUnavailable, kNotFound, kFailedPrecondition as a draft or verify.
  absl::Status Constrain(int64_t session, const ConstraintSpec& spec, int64_t start,
                         absl::Span<const int32_t> end_ids);

  // --- #30 embeddings ---
  // Embeddings of token sequences (embed_work.h) through the scheduler, beside the sessions'
  // work and in none of their caches; each input at most context_size() tokens. `cancelled`
  // (may be null) is polled between inputs.
  absl::StatusOr<EmbedOutput> Embed(absl::Span<const std::vector<int32_t>> inputs, Pooling pooling,
                                    const std::function<bool()>& cancelled = nullptr);
  // --- end ---

 private:
  struct SessionState {
    ModelState state;
    // The session's tokens as last synced (requests name positions in these); the cache holds
    // a prefix of them (all, unless preempted).
    std::vector<int32_t> history;
    VerifyScratch verify_scratch;
    std::vector<float> logits;  // the rows of the session's last forward pass
    bool busy = false;          // a request of this session is queued or running
    uint64_t last_use = 0;      // use_clock_ when a request last started or ended
    // The output's constraint (Constrain; null: none) and its first position.
    std::unique_ptr<TokenConstraint> constraint;
    int64_t constraint_start = 0;
    OutputConstraint constrained() const { return {constraint.get(), constraint_start}; }
  };

  WorkerEngine() = default;
  // Builds the session's sequence for a request and checks the ids (kInvalidArgument).
  absl::StatusOr<std::vector<int32_t>> Sequence(const SessionState& session, int64_t position,
                                                absl::Span<const int32_t> tokens) const;
  // Runs `work` with the session checked out; its forward passes go through `runner` (the
  // scheduler).
  absl::Status RunOnSession(int64_t session,
                            const std::function<absl::Status(SessionState&, ForwardRunner&)>& work,
                            WorkTiming* timing);
  // Marks the session busy for one request: kUnavailable (evicted), kNotFound, or
  // kFailedPrecondition (a request already in flight). CheckIn ends it.
  absl::StatusOr<std::shared_ptr<SessionState>> CheckOut(int64_t session);
  void CheckIn(SessionState& session);
  // Evicts least recently used idle sessions until one more session fits.
  absl::Status MakeRoomLocked(std::vector<int64_t>* evicted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The scheduler's Reclaim: frees least recently used idle sessions' blocks until `blocks`
  // are available.
  bool ReclaimBlocks(const KvBlockDemand& blocks);

  WorkerOptions options_;
  int64_t context_size_ = 0;
  std::unique_ptr<Model> model_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<std::string> chat_template_;
  std::string tokenizer_fingerprint_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvMemory> kv_memory_;              // before the sessions: outlives their caches
  std::unique_ptr<Decoder> decoder_;                 // the scheduler's thread only
  std::unique_ptr<BatchScheduler> scheduler_;        // after decoder_: goes first
  std::unique_ptr<ConstraintCompiler> constraints_;  // over tokenizer_

  mutable absl::Mutex mutex_;
  int64_t next_session_ ABSL_GUARDED_BY(mutex_) = 1;
  int64_t preemptions_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t use_clock_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<int64_t, std::shared_ptr<SessionState>> sessions_ ABSL_GUARDED_BY(mutex_);
  // Sessions evicted to make room whose streams have not closed yet.
  absl::flat_hash_set<int64_t> evicted_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tandem

#endif  // TANDEM_WORKERS_WORKER_ENGINE_H_
