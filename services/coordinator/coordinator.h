// The coordinator's logic behind tandem.v1.Generator, over WorkerClients: it learns the
// tokenizer's bytes, special ids and template from the target's Describe (and the whole
// tokenizer, to tokenize prompts itself: local_tokenizer.h), checks that every
// draft shares the target's vocabulary, keeps each session's authoritative history, pins a
// session to one target and one draft replica, and runs the rounds (round_loop.h).
//
// Limits (docs/operations.md, "Capacity and limits"): at most as many requests run at once as the
// target workers hold sessions (their Describe's max_sessions, summed over replicas) and their
// KV budgets hold at the most each may need (kv_admission.h); the rest wait in a bounded FIFO
// admission queue until their deadline. Named sessions are remembered up to max_sessions; the least
// recently used idle one is forgotten to make room, and any is forgotten after session_idle. Idle
// named sessions keep worker streams only while admitted requests leave room for them: the least
// recently used let go first and are re-filled from their history on their next request. Every
// request is checked and converted first (validated_request.h); a reply writer (reply_writer.h)
// builds what its client receives.
//
// Thread-safe: requests of different sessions run in parallel; a session serves one request
// at a time (a second concurrent one is kAborted).
#ifndef TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_
#define TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/generation/round_backends.h"
#include "core/generation/speculation_defaults.h"
#include "services/coordinator/address_resolver.h"
#include "services/coordinator/admission_queue.h"
#include "services/coordinator/kv_admission.h"
#include "services/coordinator/local_tokenizer.h"
#include "services/coordinator/output_syntax.h"
#include "services/coordinator/request_limits.h"
#include "services/coordinator/round_loop.h"
#include "services/coordinator/validated_request.h"
#include "services/coordinator/worker_client.h"
#include "services/coordinator/worker_pool.h"
#include "tandem/v1/generator.pb.h"
#include "wire/constraint_compiler.h"
#include "wire/metrics.h"

namespace tandem {

class ReplyWriter;

struct CoordinatorOptions {
  // Worker entries (address_resolver.h): an address, or a DNS name whose addresses are the
  // replicas, re-resolved every resolve_interval by `resolver` (null: getaddrinfo).
  std::vector<std::string> targets;
  std::vector<std::string> drafts;
  std::shared_ptr<AddressResolver> resolver;
  absl::Duration resolve_interval = absl::Seconds(10);
  int32_t default_draft_tokens = SpeculationDefaults::kDraftTokens;
  bool adaptive_draft = false;
  int max_sessions = 64;  // named sessions remembered (histories), not worker slots
  int32_t default_max_tokens = SpeculationDefaults::kServerMaxTokens;
  // Without a draft, a verify may let a busy target draw this many more tokens alone
  // (RoundParams::continue_tokens); 0: one token per verify.
  int32_t continue_tokens = SpeculationDefaults::kContinueTokens;
  // Requests with SPECULATION_METHOD_UNSPECIFIED use the n-gram drafter while their session
  // has no draft worker (none configured, or it failed).
  bool ngram_fallback = false;
  int max_queued_requests = 256;                     // admission queue length
  absl::Duration max_queue_wait = absl::Minutes(5);  // longest wait, whatever the deadline
  absl::Duration session_idle = absl::Minutes(5);    // a named session unused this long goes
  RequestLimits limits;
  absl::Duration worker_wait = absl::Seconds(120);    // how long start-up waits for workers
  WorkerClientOptions worker_client;                  // unary and open/close timeouts, keepalive
  WorkerPoolOptions pool;                             // health probes, draft deadline and backoff
  absl::Duration target_timeout = absl::Seconds(30);  // each call on a target stream
  // How long a request (or Tokenize) waits for a ready target after its replica failed.
  absl::Duration failover_wait = absl::Seconds(30);
  absl::Duration max_request_time = absl::Seconds(600);  // when the client sets no deadline
  // Tokenize text and chat prompts with a copy of the target's tokenizer (local_tokenizer.h)
  // instead of a Tokenize call to the target; false: always the target's Tokenize.
  bool local_tokenizer = true;
  // How the model writes tool calls and reasoning ("auto": from its template and tokens).
  OutputSyntaxFlags output_syntax;
  // --- #30 front ---
  // The names clients may call the target (--served-model-name); empty: its own name.
  std::vector<std::string> served_model_names;
  // --- end ---
};

class Coordinator {
 public:
  // Waits for the workers, reads the target's vocabulary and refuses a draft whose
  // vocabulary differs (kFailedPrecondition naming both models).
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(const CoordinatorOptions& options,
                                                             CoordinatorMetrics* metrics);
  // For tests: clients made by the caller (e.g. over in-process channels).
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options, std::vector<std::unique_ptr<WorkerClient>> targets,
      std::vector<std::unique_ptr<WorkerClient>> drafts, CoordinatorMetrics* metrics);
  ~Coordinator();  // stops re-resolving the workers first

  // Runs a request, calling `write` with each delta and then the final message; `cancelled`
  // is polled between rounds and while queued; `deadline` (the client's, capped by
  // max_request_time) bounds the wait for admission and every worker call.
  // Errors as Generator.Generate documents.
  absl::Status Generate(const v1::GenerateRequest& request,
                        const std::function<bool(const v1::GenerateResponse&)>& write,
                        const std::function<bool()>& cancelled,
                        absl::Time deadline = absl::InfiniteFuture());
  // (GenerateRequest.n > 1 runs each choice through GenerateOne: choices.h.)
  // With the coordinator's copy of the target's tokenizer while every target replica reports
  // its fingerprint; else by the least-loaded ready target.
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request);
  // --- #30 embeddings ---
  // Generator.Embed (coordinator_embed.cc): checks the limits, tokenizes text inputs as text
  // prompts are, and has a ready target embed them all in one call, bounded by `deadline`
  // (capped by max_request_time). Errors as Generator.Embed documents.
  absl::StatusOr<v1::EmbedResponse> Embed(const v1::EmbedRequest& request,
                                          absl::Time deadline = absl::InfiniteFuture());
  // --- end ---
  // Whether Tokenize (and so a text or chat prompt) runs in the coordinator now.
  bool tokenizes_locally() const;
  // The models as public clients may see them: names, never file paths.
  v1::DescribeModelResponse Describe() const;
  // --- #30 front ---
  // Ids back into text with the target's vocabulary (detokenize.h).
  absl::StatusOr<v1::DetokenizeResponse> Detokenize(const v1::DetokenizeRequest& request) const;
  // The target's vocabulary: what each id decodes to.
  const std::vector<std::string>& token_bytes() const { return token_bytes_; }
  // --- end ---
  // Worker addresses and model paths, each with the label public errors show instead.
  std::vector<std::pair<std::string, std::string>> Redactions() const;
  absl::Status CloseSession(const std::string& session_id);
  // Named sessions held plus one-off requests running.
  int active_sessions() const;
  // Reports whether a target is ready (the coordinator's health): now, and on every change,
  // on the health poller's thread. SetHealthListener(nullptr) stops the reports (drain).
  void SetHealthListener(std::function<void(bool serving)> listener);
  int max_concurrent_requests() const { return admission_->capacity(); }

 private:
  struct Session {
    std::mutex mutex;           // held by the request using the session
    ReplicaLease target_lease;  // the replicas the streams are on (released after them)
    ReplicaLease draft_lease;
    SessionWorkers workers;
    std::atomic<int64_t> last_used_ns{0};  // absl::Now() when a request started or ended
  };

  Coordinator(const CoordinatorOptions& options, CoordinatorMetrics* metrics)
      : options_(options), metrics_(metrics) {}
  absl::Status Init();
  // --- #30 n choices ---
  // One choice: what Generate does for a request with n <= 1.
  absl::Status GenerateOne(const v1::GenerateRequest& request,
                           const std::function<bool(const v1::GenerateResponse&)>& write,
                           const std::function<bool()>& cancelled, absl::Time deadline);
  // --- end ---
  // Builds local_tokenizer_ from the first target's Describe, or logs why the targets tokenize.
  void InitLocalTokenizer(const v1::DescribeResponse& target);
  absl::StatusOr<std::shared_ptr<Session>> NewSession(const std::string& id);
  absl::StatusOr<std::shared_ptr<Session>> FindOrCreate(const v1::GenerateRequest& request,
                                                        std::string* id);
  // Readies an admitted request's session: a target stream if its were let go while idle, a
  // draft stream if the request speculates and the session has none that works, and the
  // deadlines of its worker calls into `params`. True when the draft tried did not answer.
  absl::StatusOr<bool> PrepareWorkers(const std::string& id, Session& session, RoundParams& params,
                                      absl::Time request_deadline);
  // Runs the rounds, streaming through `reply`, with the metrics' timing hooks and failover;
  // a target short of KV memory after the first token pauses the request, which then resumes
  // from its history.
  absl::StatusOr<RoundOutcome> RunRounds(const std::string& id, Session& session,
                                         const RoundParams& params, bool draft_lost,
                                         ReplyWriter& reply, absl::Time request_deadline,
                                         const std::function<bool()>& cancelled);
  // Gives the session a draft stream if a draft is ready; false when the one tried failed.
  bool AttachDraft(const std::string& id, Session& session);
  // True when the session has no usable draft stream (none, broken, or on a draft that is
  // down or backing off) and should look for one.
  bool NeedsDraft(const Session& session) const;
  // Cancels the session's target stream when its replica is known to be down.
  void CancelIfTargetDown(Session& session);
  // What a draft call (or open) teaches: its latency into `latency`, a failure into the
  // replica's backoff.
  void DraftDone(size_t replica, DraftLatency& latency, absl::Duration seconds, int64_t tokens,
                 const absl::Status& status);
  CallDeadlines Deadlines(const Session& session, absl::Time request_deadline);
  absl::StatusOr<std::unique_ptr<WorkerStream>> Reopen(const std::string& id, Session& session,
                                                       const absl::Status& failure,
                                                       absl::Time request_deadline, int failover);
  // Forgets idle named sessions (session_idle, and LRU down to `keep`); the caller destroys
  // what is returned outside mutex_ (closing streams waits on the workers).
  std::vector<std::shared_ptr<Session>> EvictLocked(size_t keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void UpdateSessionGauge() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Takes the worker streams of least recently used idle named sessions so that admitted
  // requests plus idle streams fit the targets' sessions; the caller closes them outside
  // mutex_ before attaching. The sessions keep their history. `mine` (whose mutex the
  // caller holds, or null) is left alone.
  std::vector<std::unique_ptr<WorkerStream>> DetachIdleLocked(const Session* mine)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Gives a session whose streams were detached a new target stream.
  absl::Status ReattachTarget(Session& session, const std::string& id);
  void CountOneOff(int delta);

  CoordinatorOptions options_;
  CoordinatorMetrics* metrics_;
  std::unique_ptr<WorkerPool> targets_;
  std::unique_ptr<WorkerPool> drafts_;
  v1::ModelInfo target_info_;
  std::optional<v1::ModelInfo> draft_info_;
  std::vector<std::string> token_bytes_;
  std::string system_fingerprint_;  // #30 front: set by Init (system_fingerprint.h)
  GenerateSettings generate_settings_;  // set by Init: the options and the target's model
  std::optional<LocalTokenizer> local_tokenizer_;  // unset: the targets tokenize
  // Requests' constraints over the target's token bytes (Init): refused before any worker
  // call when they do not compile, and the coordinator's own state for forced tokens.
  std::unique_ptr<ConstraintCompiler> constraints_;
  std::atomic<uint64_t> next_session_{1};
  std::unique_ptr<AdmissionQueue> admission_;
  KvBudget kv_budget_;  // the targets' KV blocks (Init)

  // Held from taking streams (DetachIdleLocked, EvictLocked) until they are closed: a
  // session that attaches after it finds the workers' slots those streams held free (without
  // it, a request that found nothing left to detach could attach while another's detached
  // streams were still closing, and the worker would evict a session). Before mutex_.
  absl::Mutex detach_mutex_ ABSL_ACQUIRED_BEFORE(mutex_);
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mutex_);
  int oneoff_running_ ABSL_GUARDED_BY(mutex_) = 0;  // one-off requests holding sessions
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_COORDINATOR_H_
