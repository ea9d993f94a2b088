#include "services/coordinator/worker_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {

ReplicaLease::ReplicaLease(WorkerPool* pool, size_t index) : pool_(pool), index_(index) {
  absl::MutexLock lock(&pool_->mutex_);
  ++pool_->replicas_[index_]->pinned;
}

ReplicaLease ReplicaLease::Adopt(WorkerPool* pool, size_t index) {
  ReplicaLease lease;
  lease.pool_ = pool;
  lease.index_ = index;
  return lease;
}

ReplicaLease& ReplicaLease::operator=(ReplicaLease&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = other.pool_;
    index_ = other.index_;
    other.pool_ = nullptr;
  }
  return *this;
}

void ReplicaLease::Release() {
  if (pool_ == nullptr) return;
  absl::MutexLock lock(&pool_->mutex_);
  --pool_->replicas_[index_]->pinned;
  pool_ = nullptr;
}

WorkerPool::WorkerPool(std::vector<std::unique_ptr<WorkerClient>> clients,
                       const WorkerPoolOptions& options)
    : options_(options) {
  absl::MutexLock lock(&mutex_);
  for (auto& c : clients) replicas_.push_back(std::make_unique<Replica>(std::move(c), options_));
}

WorkerPool::~WorkerPool() {
  discovery_.reset();
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (poller_.joinable()) poller_.join();
}

size_t WorkerPool::size() const {
  absl::MutexLock lock(&mutex_);
  return replicas_.size();
}

size_t WorkerPool::members() const {
  absl::MutexLock lock(&mutex_);
  return std::count_if(replicas_.begin(), replicas_.end(), [](const auto& r) { return r->member; });
}

WorkerPool::Replica& WorkerPool::At(size_t i) const {
  absl::MutexLock lock(&mutex_);
  return *replicas_[i];  // a Replica is never moved nor destroyed before the pool
}

void WorkerPool::SetRequiredFingerprint(const std::string& fingerprint) {
  absl::MutexLock lock(&mutex_);
  fingerprint_ = fingerprint;
}

void WorkerPool::WatchTokenizer(const std::string& fingerprint) {
  absl::MutexLock lock(&mutex_);
  tokenizer_fingerprint_ = fingerprint;
}

void WorkerPool::SetMembers(const std::vector<std::string>& addresses,
                            const ClientFactory& make_client) {
  std::vector<std::string> added = addresses;
  {
    absl::MutexLock lock(&mutex_);
    for (const auto& r : replicas_) {
      const bool listed =
          std::find(addresses.begin(), addresses.end(), r->address) != addresses.end();
      if (r->member && !listed) {
        LOG(WARNING) << "worker " << r->address << " is no longer listed: retired";
        r->ready = false;  // a retired replica is probed again only once it is listed again
      }
      r->member = listed;
      added.erase(std::remove(added.begin(), added.end(), r->address), added.end());
    }
  }
  for (const std::string& address : added) {
    if (size() >= options_.max_replicas) {
      LOG(ERROR) << "worker " << address << " not added: the pool already had "
                 << options_.max_replicas << " replicas";
      break;
    }
    auto replica = std::make_unique<Replica>(make_client(address), options_);
    Probe(*replica);  // joins ready when it answers now, else with a later probe
    LOG(INFO) << "worker " << address << " added" << (replica->ready ? "" : " (not ready yet)");
    absl::MutexLock lock(&mutex_);
    replicas_.push_back(std::move(replica));
  }
  Notify();
}

void WorkerPool::Discover(std::unique_ptr<ReplicaDiscovery> discovery, ClientFactory make_client,
                          std::function<void()> after) {
  discovery_ = std::move(discovery);
  discovering_ = true;
  discovery_->Start([this, make_client = std::move(make_client),
                     after = std::move(after)](const std::vector<std::string>& addresses) {
    SetMembers(addresses, make_client);
    if (after) after();
  });
}

void WorkerPool::StopDiscovery() {
  discovery_.reset();
  discovering_ = false;
}

int WorkerPool::SessionCapacity() const {
  absl::MutexLock lock(&mutex_);
  int sessions = 0;
  for (const auto& r : replicas_) {
    if (r->member && !r->refused) sessions += r->max_sessions;
  }
  return sessions;
}

double WorkerPool::KvUsage() const {
  absl::MutexLock lock(&mutex_);
  double used = 0, total = 0;
  for (const auto& r : replicas_) {
    if (!r->member || !r->ready) continue;
    if (r->kv_blocks > 0) {
      used += static_cast<double>(r->kv_blocks_in_use) / r->kv_blocks;
      total += 1;
    } else if (r->max_sessions > 0) {
      used += std::min(1.0, static_cast<double>(r->reported_sessions) / r->max_sessions);
      total += 1;
    }
  }
  return total > 0 ? used / total : 0;
}

void WorkerPool::SetProbeListener(std::function<void()> probed) {
  absl::MutexLock lock(&listener_mutex_);
  probed_ = std::move(probed);
}

void WorkerPool::StartWatching() {
  if (poller_.joinable() || size() == 0) return;
  ProbeMembers();  // the loads are known before the first Pick, not a thread start later
  poller_ = std::thread([this] { Poll(); });
}

void WorkerPool::ProbeMembers() {
  for (size_t i = 0; i < size(); ++i) {
    Replica& r = At(i);
    bool member;
    {
      absl::MutexLock lock(&mutex_);
      member = r.member;
    }
    if (member) Probe(r);
  }
}

void WorkerPool::SetListener(std::function<void(bool any_ready)> listener) {
  {
    absl::MutexLock lock(&listener_mutex_);
    listener_ = std::move(listener);
    reported_.reset();
  }
  Notify();
}

void WorkerPool::Notify() {
  const bool any = AnyReady();
  absl::MutexLock lock(&listener_mutex_);
  if (listener_ && reported_ != any) {
    reported_ = any;
    listener_(any);
  }
}

void WorkerPool::Poll() {
  while (true) {
    Notify();
    {
      absl::MutexLock lock(&mutex_);
      if (mutex_.AwaitWithTimeout(absl::Condition(&stopping_), options_.probe_interval)) return;
    }
    ProbeMembers();
    absl::MutexLock lock(&listener_mutex_);
    if (probed_) probed_();
  }
}

void WorkerPool::Probe(Replica& r) {
  absl::StatusOr<v1::DescribeResponse> d = r.client->Describe(false, options_.probe_timeout);
  absl::MutexLock lock(&mutex_);
  const bool refused =
      d.ok() && !fingerprint_.empty() && d->model().vocabulary_fingerprint() != fingerprint_;
  if (refused && !r.refused) {
    LOG(ERROR) << "worker " << r.address << " serves '" << d->model().name() << "' (vocabulary "
               << d->model().vocabulary_fingerprint() << "), not vocabulary " << fingerprint_
               << ": not used";
  }
  r.refused = refused;
  if (d.ok() || r.client->Connected()) r.last_alive = absl::Now();
  if (d.ok() && !refused && !tokenizer_fingerprint_.empty() &&
      d->model().tokenizer_fingerprint() != tokenizer_fingerprint_ && !tokenizer_mismatch_) {
    LOG(WARNING) << "worker " << r.address << " tokenizes with tokenizer "
                 << d->model().tokenizer_fingerprint() << ", not " << tokenizer_fingerprint_
                 << ": prompts are tokenized on the target workers from now on";
    tokenizer_mismatch_ = true;
  }
  // Back after its probes failed (a frozen or restarted process): the next call may try it.
  // A replica marked down by a failed call whose probes kept answering keeps its back-off.
  if (d.ok() && !r.probe_answered) r.backoff.Reprobed();
  r.probe_answered = d.ok();
  r.ready = d.ok() && !refused && r.member;
  if (!r.ready) return;
  r.max_sessions = d->max_sessions();
  r.reported_sessions = d->active_sessions();
  r.kv_blocks = d->kv_capacity().global_blocks();
  r.kv_blocks_in_use = d->kv_blocks_in_use();
  r.queue_depth = d->queue_depth();
  r.pinned_at_probe = r.pinned;
}

bool WorkerPool::Ready(size_t i) const {
  absl::MutexLock lock(&mutex_);
  return replicas_[i]->ready && replicas_[i]->member;
}

bool WorkerPool::Usable(size_t i) const {
  absl::MutexLock lock(&mutex_);
  const Replica& r = *replicas_[i];
  return r.ready && r.member && r.backoff.Allowed(absl::Now());
}

bool WorkerPool::AnyReadyLocked() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const auto& r) { return r->ready && r->member; });
}

bool WorkerPool::AnyReady() const {
  absl::MutexLock lock(&mutex_);
  return AnyReadyLocked();
}

bool WorkerPool::AnyStartingLocked(absl::Time now) const {
  if (discovering_ &&
      std::none_of(replicas_.begin(), replicas_.end(), [](const auto& r) { return r->member; })) {
    return true;  // discovery has not named a replica yet
  }
  return std::any_of(replicas_.begin(), replicas_.end(), [&](const auto& r) {
    return r->member && !r->refused && now - r->last_alive < options_.reconnect_grace;
  });
}

bool WorkerPool::AnyReadyOrStarting() const {
  absl::MutexLock lock(&mutex_);
  return AnyReadyLocked() || AnyStartingLocked(absl::Now());
}

void WorkerPool::MarkDown(size_t i) {
  {
    absl::MutexLock lock(&mutex_);
    replicas_[i]->ready = false;
  }
  Notify();
}

double WorkerPool::LoadLocked(const Replica& r) const {
  // Sessions other coordinators hold (as of the last probe), ours now, and queued work.
  const int32_t others = std::max(0, r.reported_sessions - r.pinned_at_probe);
  return static_cast<double>(r.pinned + others + r.queue_depth) / std::max(1, r.max_sessions);
}

std::optional<size_t> WorkerPool::PickLocked(absl::Time now, const std::vector<bool>* skip) {
  const size_t n = replicas_.size();
  std::optional<size_t> best;
  double best_load = 0;
  const size_t start = n == 0 ? 0 : rotation_++ % n;
  for (size_t j = 0; j < n; ++j) {
    const size_t i = (start + j) % n;
    const Replica& r = *replicas_[i];
    const bool skipped = skip != nullptr && i < skip->size() && (*skip)[i];
    if (!r.ready || !r.member || !r.backoff.Allowed(now) || skipped) continue;
    const double load = LoadLocked(r);
    if (!best.has_value() || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}

std::optional<size_t> WorkerPool::Pick(const std::vector<bool>* skip) {
  absl::MutexLock lock(&mutex_);
  return PickLocked(absl::Now(), skip);
}

std::optional<size_t> WorkerPool::WaitPick(absl::Time deadline, const std::vector<bool>* skip,
                                           bool pin) {
  absl::MutexLock lock(&mutex_);
  while (true) {
    const absl::Time now = absl::Now();
    if (std::optional<size_t> i = PickLocked(now, skip)) {
      if (pin) ++replicas_[*i]->pinned;
      return i;
    }
    if (now >= deadline || stopping_) return std::nullopt;
    if (!AnyReadyLocked() && !AnyStartingLocked(now)) return std::nullopt;  // nothing to wait for
    // Readiness comes with the next probe and a backoff ends with time: look again soon.
    mutex_.AwaitWithDeadline(absl::Condition(&stopping_),
                             std::min(deadline, now + absl::Milliseconds(20)));
  }
}

absl::Status WorkerPool::OnReady(absl::Time give_up,
                                 const std::function<absl::Status(size_t)>& call,
                                 ReplicaLease* lease) {
  absl::Status last = absl::UnavailableError("no replica is ready");
  std::vector<bool> full(size(), false);  // answered RESOURCE_EXHAUSTED this time
  while (true) {
    std::optional<size_t> i = WaitPick(give_up, &full, /*pin=*/lease != nullptr);
    if (!i.has_value()) {
      if (last.code() == absl::StatusCode::kResourceExhausted) return last;
      if (!AnyReadyOrStarting()) {
        return absl::UnavailableError(absl::StrCat(
            "no worker is ready or starting (none answered for ",
            absl::FormatDuration(options_.reconnect_grace), "); last failure: ", last.message()));
      }
      return absl::UnavailableError(
          absl::StrCat("no ", size() == 1 ? "" : "other ",
                       "worker became ready in time; last failure: ", last.message()));
    }
    ReplicaLease pinned = lease != nullptr ? ReplicaLease::Adopt(this, *i) : ReplicaLease();
    absl::Status status = call(*i);
    if (status.ok() && lease != nullptr) *lease = std::move(pinned);
    if (status.code() == absl::StatusCode::kResourceExhausted) {
      // Full (the reported loads are a probe old): another replica may have room; when none
      // is ready now, the worker's answer stands.
      if (full.size() <= *i) full.resize(*i + 1, false);
      full[*i] = true;
      last = std::move(status);
      if (!Pick(&full).has_value()) return last;
      continue;
    }
    if (status.code() != absl::StatusCode::kUnavailable &&
        status.code() != absl::StatusCode::kDeadlineExceeded) {
      return status;
    }
    MarkDown(*i);  // until a probe finds it ready again
    last = std::move(status);
  }
}

absl::StatusOr<std::unique_ptr<WorkerStream>> WorkerPool::AttachReady(const std::string& session_id,
                                                                      int32_t context_size,
                                                                      absl::Time give_up,
                                                                      absl::Duration timeout,
                                                                      ReplicaLease* lease) {
  std::unique_ptr<WorkerStream> stream;
  // Counted as the replica is picked, before the worker counts it (probes race).
  RETURN_IF_ERROR(OnReady(
      give_up,
      [&](size_t i) {
        const absl::Duration open_timeout =
            std::max(absl::Milliseconds(1), std::min(timeout, give_up - absl::Now()));
        absl::StatusOr<std::unique_ptr<WorkerStream>> opened =
            client(i).Attach(session_id, context_size, open_timeout);
        if (!opened.ok()) return opened.status();
        stream = *std::move(opened);
        return absl::OkStatus();
      },
      lease));
  return stream;
}

}  // namespace tandem
