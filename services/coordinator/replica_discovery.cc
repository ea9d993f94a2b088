#include "services/coordinator/replica_discovery.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace tandem {

absl::StatusOr<std::unique_ptr<ReplicaDiscovery>> ReplicaDiscovery::Create(
    const std::vector<std::string>& entries, std::shared_ptr<AddressResolver> resolver,
    absl::Duration interval) {
  std::vector<WorkerEntry> parsed;
  for (const std::string& e : entries) {
    absl::StatusOr<WorkerEntry> entry = ParseWorkerEntry(e);
    if (!entry.ok()) return entry.status();
    parsed.push_back(*std::move(entry));
  }
  if (resolver == nullptr) resolver = std::make_shared<GetaddrinfoResolver>();
  return std::unique_ptr<ReplicaDiscovery>(
      new ReplicaDiscovery(std::move(parsed), std::move(resolver), interval));
}

ReplicaDiscovery::ReplicaDiscovery(std::vector<WorkerEntry> entries,
                                   std::shared_ptr<AddressResolver> resolver,
                                   absl::Duration interval)
    : entries_(std::move(entries)),
      resolver_(std::move(resolver)),
      interval_(interval),
      known_(entries_.size()) {}

ReplicaDiscovery::~ReplicaDiscovery() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool ReplicaDiscovery::dynamic() const {
  return std::any_of(entries_.begin(), entries_.end(), [](const auto& e) { return e.resolved; });
}

std::string ReplicaDiscovery::NameOf(const std::string& address) {
  absl::MutexLock lock(&refresh_mutex_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].resolved) continue;
    const std::vector<std::string>& known = known_[i];
    if (std::find(known.begin(), known.end(), address) != known.end()) return entries_[i].name;
  }
  return "";
}

std::vector<std::string> ReplicaDiscovery::Refresh(std::vector<std::string>* failures) {
  absl::MutexLock lock(&refresh_mutex_);
  std::vector<std::string> all;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const WorkerEntry& e = entries_[i];
    if (!e.resolved) {
      known_[i] = {e.name};
    } else if (absl::StatusOr<std::vector<std::string>> a = resolver_->Resolve(e.name); a.ok()) {
      if (*a != known_[i]) {
        LOG(INFO) << "worker entry " << e.entry << " resolves to " << absl::StrJoin(*a, ", ");
      }
      known_[i] = *std::move(a);
    } else if (failures != nullptr) {
      failures->push_back(absl::StrCat(e.entry, ": ", a.status().message()));
    }
    for (const std::string& address : known_[i]) {
      if (std::find(all.begin(), all.end(), address) == all.end()) all.push_back(address);
    }
  }
  return all;
}

absl::StatusOr<std::vector<std::string>> ReplicaDiscovery::AwaitAddresses(absl::Time give_up) {
  while (true) {
    std::vector<std::string> failures;
    std::vector<std::string> all = Refresh(&failures);
    std::vector<std::string> missing;
    {
      absl::MutexLock lock(&refresh_mutex_);
      for (size_t i = 0; i < entries_.size(); ++i) {
        if (known_[i].empty()) missing.push_back(entries_[i].entry);
      }
    }
    if (missing.empty()) return all;
    if (absl::Now() >= give_up) {
      return absl::UnavailableError(
          absl::StrCat("no address for worker entry ", absl::StrJoin(missing, ", "),
                       failures.empty() ? "" : ": ", absl::StrJoin(failures, "; ")));
    }
    absl::MutexLock lock(&mutex_);
    if (mutex_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200))) {
      return absl::CancelledError("replica discovery stopped");
    }
  }
}

void ReplicaDiscovery::Start(Update on_update) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, on_update = std::move(on_update)] { Run(on_update); });
}

void ReplicaDiscovery::Run(const Update& on_update) {
  while (true) {
    {
      absl::MutexLock lock(&mutex_);
      if (mutex_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
    }
    std::vector<std::string> failures;
    std::vector<std::string> addresses = Refresh(&failures);
    for (const std::string& f : failures) LOG(WARNING) << "re-resolving worker entry " << f;
    on_update(addresses);
  }
}

}  // namespace tandem
