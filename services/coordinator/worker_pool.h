// The replicas of one role (targets or drafts): which are ready, how loaded each is, and which
// one a new session (or a Tokenize) should use.
//
// A background poller calls Describe on every replica each probe_interval with a deadline of
// probe_timeout: a replica is ready while its last probe succeeded (a worker answers Describe
// only once its model has loaded) and no call on it has failed since. Describe also reports
// the worker's active sessions and queue depth; with the sessions this coordinator pinned
// since, they make a replica's load, and Pick chooses the least-loaded ready replica (load
// relative to max_sessions; ties rotate). Draft replicas also carry their latency tracker and
// retry backoff (draft_deadline.h): a draft that failed is not picked again before its
// backoff has passed.
//
// The replicas may change while the pool runs (replica_discovery.h): SetMembers adds one per
// new address (ready once its first probe answers, with the vocabulary the pool requires) and
// retires those no longer listed: a retired replica is neither probed nor picked, and a session
// on it moves to another at its next request. Indices stay valid for the pool's lifetime.
//
// Thread-safe.
#ifndef TANDEM_SERVICES_COORDINATOR_WORKER_POOL_H_
#define TANDEM_SERVICES_COORDINATOR_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/coordinator/draft_deadline.h"
#include "services/coordinator/replica_discovery.h"
#include "services/coordinator/worker_client.h"

namespace tandem {

struct WorkerPoolOptions {
  absl::Duration probe_interval = absl::Milliseconds(500);
  absl::Duration probe_timeout = absl::Seconds(1);
  DraftDeadlineOptions draft_deadline;
  BackoffOptions backoff;
  size_t max_replicas = 256;  // distinct addresses ever added; more are refused (logged)
  // How long a replica that stopped answering counts as reconnecting (a restart on its port):
  // while one is, or one answers but is still loading, or discovery has found none yet, a
  // caller waits for it; when none is, there is nothing to wait for and the call fails now.
  absl::Duration reconnect_grace = absl::Seconds(5);
};

class WorkerPool;

// One replica's place in a session: counts towards its load while held.
class ReplicaLease {
 public:
  ReplicaLease() = default;
  ReplicaLease(WorkerPool* pool, size_t index);
  // Holds a place the pool already counted (WaitPick with `pin`).
  static ReplicaLease Adopt(WorkerPool* pool, size_t index);
  ReplicaLease(ReplicaLease&& other) noexcept { *this = std::move(other); }
  ReplicaLease& operator=(ReplicaLease&& other) noexcept;
  ~ReplicaLease() { Release(); }

  bool held() const { return pool_ != nullptr; }
  size_t index() const { return index_; }
  void Release();

 private:
  WorkerPool* pool_ = nullptr;
  size_t index_ = 0;
};

class WorkerPool {
 public:
  using ClientFactory = std::function<std::unique_ptr<WorkerClient>(const std::string& address)>;

  WorkerPool(std::vector<std::unique_ptr<WorkerClient>> clients, const WorkerPoolOptions& options);
  ~WorkerPool();  // stops the discovery and the poller

  // Replicas ever added, retired ones included.
  size_t size() const;
  WorkerClient& client(size_t i) { return *At(i).client; }
  // A draft's latency per position of its calls, and of its opens (which allocate a cache).
  DraftLatency& latency(size_t i) { return At(i).latency; }
  DraftLatency& open_latency(size_t i) { return At(i).open_latency; }
  Backoff& backoff(size_t i) { return At(i).backoff; }
  // Replicas listed by the last SetMembers (all, before any).
  size_t members() const;

  // A replica added later must serve this vocabulary to become ready ("" : any).
  void SetRequiredFingerprint(const std::string& fingerprint);
  // Probes compare every replica's ModelInfo.tokenizer_fingerprint with this one (the
  // coordinator's own copy of the tokenizer, local_tokenizer.h); the first replica that differs
  // is logged and tokenizer_mismatch() is true from then on.
  void WatchTokenizer(const std::string& fingerprint);
  bool tokenizer_mismatch() const { return tokenizer_mismatch_.load(); }
  // Makes the replicas those of `addresses`: a new address becomes a replica (its client made
  // by `make_client`, probed once before it joins), a listed retired one rejoins when its
  // next probe answers, and replicas not listed are retired.
  void SetMembers(const std::vector<std::string>& addresses, const ClientFactory& make_client);
  // Keeps the members current: `discovery`'s answers go to SetMembers, from its thread, each
  // followed by `after` (may be empty).
  void Discover(std::unique_ptr<ReplicaDiscovery> discovery, ClientFactory make_client,
                std::function<void()> after = nullptr);
  // Stops the discovery (its thread, and the `after` calls). Not concurrent with Discover.
  void StopDiscovery();
  // The sessions the members hold (their max_sessions at their last probe); 0 before any
  // member answered.
  int SessionCapacity() const;
  // The share of the ready members' KV memory in use at their last probes, 0..1: the mean over
  // them of KV blocks in use over the bounded budget (DescribeResponse.kv_blocks_in_use), or,
  // where a member has no KV bound, of its sessions over its max_sessions. 0 with none ready.
  double KvUsage() const;

  // Probes every replica once, then keeps probing on a thread. `on_change(any_ready)` runs on the
  // poller's thread whenever AnyReady changes (and once at start); SetListener(nullptr) stops the
  // reports.
  void StartWatching();
  void SetListener(std::function<void(bool any_ready)> listener);
  // `probed` runs on the poller's thread after each round of probes (nullptr: none).
  void SetProbeListener(std::function<void()> probed);

  bool Ready(size_t i) const;
  // Ready, and its backoff allows a call now.
  bool Usable(size_t i) const;
  bool AnyReady() const;
  // Ready, or worth waiting for: loading, lost less than reconnect_grace ago, or not yet
  // resolved by discovery. False means a WaitPick would wait for nothing.
  bool AnyReadyOrStarting() const;
  // Takes replica `i` out of choice until a probe succeeds again (a call on it failed).
  void MarkDown(size_t i);
  // The least-loaded ready replica whose backoff allows a call now (and not in `skip`, by
  // index); nullopt when none is.
  std::optional<size_t> Pick(const std::vector<bool>* skip = nullptr);
  // As Pick, waiting up to `deadline` for a replica to become ready, but not while none is
  // starting (AnyReadyOrStarting): then nullopt at once. With `pin`, the replica
  // chosen is counted as taken in the same step (for ReplicaLease::Adopt), so that concurrent
  // picks spread instead of all choosing the same least-loaded one.
  std::optional<size_t> WaitPick(absl::Time deadline, const std::vector<bool>* skip = nullptr,
                                 bool pin = false);

  // Runs `call(i)` on the replica WaitPick gives. A replica that is down (kUnavailable or
  // kDeadlineExceeded from `call`) is marked down and the next one tried, or the one that
  // comes back waited for, until `give_up`: then kUnavailable naming the last failure. A full
  // one (kResourceExhausted) makes way for another ready one, if any; else that is the answer.
  // Other errors are returned as they are. With `lease`, each replica tried is pinned as it is
  // picked, and `lease` holds the one whose call succeeded.
  absl::Status OnReady(absl::Time give_up, const std::function<absl::Status(size_t)>& call,
                       ReplicaLease* lease = nullptr);
  // Opens a session stream on a ready replica by OnReady, each open bounded by `timeout`;
  // `lease` then holds that replica.
  absl::StatusOr<std::unique_ptr<WorkerStream>> AttachReady(const std::string& session_id,
                                                            int32_t context_size,
                                                            absl::Time give_up,
                                                            absl::Duration timeout,
                                                            ReplicaLease* lease);

 private:
  friend class ReplicaLease;
  struct Replica {
    Replica(std::unique_ptr<WorkerClient> c, const WorkerPoolOptions& o)
        : client(std::move(c)),
          latency(o.draft_deadline),
          open_latency(o.draft_deadline),
          backoff(o.backoff) {}
    std::unique_ptr<WorkerClient> client;
    const std::string address = client->address();
    DraftLatency latency;
    DraftLatency open_latency;
    Backoff backoff;
    // Guarded by the pool's mutex_:
    bool ready = true;                    // the coordinator starts after every worker answered
    bool member = true;                   // listed by the last SetMembers
    bool refused = false;                 // its last probe reported another vocabulary
    absl::Time last_alive = absl::Now();  // its process last answered (or was connected)
    bool probe_answered = true;           // its last probe succeeded
    int32_t max_sessions = 0;
    int32_t reported_sessions = 0;  // active sessions at the last probe
    int32_t pinned_at_probe = 0;    // our sessions on it at the last probe
    int32_t queue_depth = 0;
    int32_t pinned = 0;  // sessions of this coordinator on it now
    int64_t kv_blocks = 0;         // its KV budget in blocks at the last probe; 0: unbounded
    int64_t kv_blocks_in_use = 0;  // and those in use
  };

  Replica& At(size_t i) const;
  void Poll();
  void ProbeMembers();
  void Probe(Replica& r);
  double LoadLocked(const Replica& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  std::optional<size_t> PickLocked(absl::Time now, const std::vector<bool>* skip)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool AnyReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool AnyStartingLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Notify() ABSL_LOCKS_EXCLUDED(mutex_);

  const WorkerPoolOptions options_;
  mutable absl::Mutex mutex_;
  std::vector<std::unique_ptr<Replica>> replicas_ ABSL_GUARDED_BY(mutex_);  // never shrinks
  std::string fingerprint_ ABSL_GUARDED_BY(mutex_);
  std::string tokenizer_fingerprint_ ABSL_GUARDED_BY(mutex_);
  std::atomic<bool> tokenizer_mismatch_{false};
  uint64_t rotation_ ABSL_GUARDED_BY(mutex_) = 0;  // breaks ties between equal loads
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Mutex listener_mutex_;  // held while a listener runs, so SetListener(nullptr) is final
  std::function<void(bool)> listener_ ABSL_GUARDED_BY(listener_mutex_);
  std::optional<bool> reported_ ABSL_GUARDED_BY(listener_mutex_);
  std::function<void()> probed_ ABSL_GUARDED_BY(listener_mutex_);
  std::thread poller_;
  std::unique_ptr<ReplicaDiscovery> discovery_;  // stopped first
  std::atomic<bool> discovering_{false};         // discovery_ runs (its members may come)
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_WORKER_POOL_H_
