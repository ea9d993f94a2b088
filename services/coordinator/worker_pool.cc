#include "services/coordinator/worker_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {

ReplicaLease::ReplicaLease(WorkerPool* pool, size_t index) : pool_(pool), index_(index) {
  absl::MutexLock lock(&pool_->mutex_);
  ++pool_->replicas_[index_]->pinned;
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
  for (auto& c : clients) replicas_.push_back(std::make_unique<Replica>(std::move(c), options_));
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (poller_.joinable()) poller_.join();
}

void WorkerPool::StartWatching() {
  if (poller_.joinable() || replicas_.empty()) return;
  poller_ = std::thread([this] { Poll(); });
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
    for (size_t i = 0; i < replicas_.size(); ++i) Probe(i);
    Notify();
    absl::MutexLock lock(&mutex_);
    if (mutex_.AwaitWithTimeout(absl::Condition(&stopping_), options_.probe_interval)) return;
  }
}

void WorkerPool::Probe(size_t i) {
  Replica& r = *replicas_[i];
  absl::StatusOr<v1::DescribeResponse> d = r.client->Describe(false, options_.probe_timeout);
  absl::MutexLock lock(&mutex_);
  r.ready = d.ok();
  if (!d.ok()) return;
  r.max_sessions = d->max_sessions();
  r.reported_sessions = d->active_sessions();
  r.queue_depth = d->queue_depth();
  r.pinned_at_probe = r.pinned;
}

bool WorkerPool::Ready(size_t i) const {
  absl::MutexLock lock(&mutex_);
  return replicas_[i]->ready;
}

bool WorkerPool::Usable(size_t i) const {
  absl::MutexLock lock(&mutex_);
  return replicas_[i]->ready && replicas_[i]->backoff.Allowed(absl::Now());
}

bool WorkerPool::AnyReadyLocked() const {
  return std::any_of(replicas_.begin(), replicas_.end(), [](const auto& r) { return r->ready; });
}

bool WorkerPool::AnyReady() const {
  absl::MutexLock lock(&mutex_);
  return AnyReadyLocked();
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
    if (!r.ready || !r.backoff.Allowed(now) || (skip != nullptr && (*skip)[i])) continue;
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

std::optional<size_t> WorkerPool::WaitPick(absl::Time deadline, const std::vector<bool>* skip) {
  absl::MutexLock lock(&mutex_);
  while (true) {
    const absl::Time now = absl::Now();
    if (std::optional<size_t> i = PickLocked(now, skip)) return i;
    if (now >= deadline || stopping_) return std::nullopt;
    // Readiness comes with the next probe and a backoff ends with time: look again soon.
    mutex_.AwaitWithDeadline(absl::Condition(&stopping_),
                             std::min(deadline, now + absl::Milliseconds(20)));
  }
}

absl::Status WorkerPool::OnReady(absl::Time give_up,
                                 const std::function<absl::Status(size_t)>& call) {
  absl::Status last = absl::UnavailableError("no replica is ready");
  std::vector<bool> full(replicas_.size(), false);  // answered RESOURCE_EXHAUSTED this time
  while (true) {
    std::optional<size_t> i = WaitPick(give_up, &full);
    if (!i.has_value()) {
      if (last.code() == absl::StatusCode::kResourceExhausted) return last;
      return absl::UnavailableError(
          absl::StrCat("no ", replicas_.size() == 1 ? "" : "other ",
                       "worker became ready in time; last failure: ", last.message()));
    }
    absl::Status status = call(*i);
    if (status.code() == absl::StatusCode::kResourceExhausted) {
      // Full (the reported loads are a probe old): another replica may have room; when none
      // is ready now, the worker's answer stands.
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
  RETURN_IF_ERROR(OnReady(give_up, [&](size_t i) {
    WorkerClient& c = client(i);
    const absl::Duration open_timeout =
        std::max(absl::Milliseconds(1), std::min(timeout, give_up - absl::Now()));
    *lease = ReplicaLease(this, i);  // counted before the worker counts it (probes race)
    absl::StatusOr<std::unique_ptr<WorkerStream>> opened =
        c.Attach(session_id, context_size, open_timeout);
    if (!opened.ok()) {
      lease->Release();
      return opened.status();
    }
    stream = *std::move(opened);
    return absl::OkStatus();
  }));
  return stream;
}

}  // namespace tandem
