// Which workers a role's entries (address_resolver.h) name now: each entry's addresses,
// re-resolved every `interval` on a thread of its own, so pods that come and go behind a
// headless Service become and stop being replicas. A request never waits for a resolver.
//
// An entry whose lookup fails keeps the addresses it had: a DNS hiccup retires nothing (a
// replica that is really gone fails its health probes instead).
//
// Thread-safe; Start's `on_update` runs on the discovery thread.
#ifndef TANDEM_SERVICES_COORDINATOR_REPLICA_DISCOVERY_H_
#define TANDEM_SERVICES_COORDINATOR_REPLICA_DISCOVERY_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/coordinator/address_resolver.h"

namespace tandem {

class ReplicaDiscovery {
 public:
  using Update = std::function<void(const std::vector<std::string>& addresses)>;

  // kInvalidArgument naming an entry that is not an address (ParseWorkerEntry).
  static absl::StatusOr<std::unique_ptr<ReplicaDiscovery>> Create(
      const std::vector<std::string>& entries, std::shared_ptr<AddressResolver> resolver,
      absl::Duration interval);
  ~ReplicaDiscovery();  // stops the thread (after a lookup in flight, bounded by its timeout)

  // Resolves every entry once; the addresses of all entries, in entry order, each once.
  // `failures` (optional) gets one message per entry whose lookup failed.
  std::vector<std::string> Refresh(std::vector<std::string>* failures = nullptr);
  // Refreshes until every entry has an address or `give_up` passes: then kUnavailable
  // naming the entries without one and why.
  absl::StatusOr<std::vector<std::string>> AwaitAddresses(absl::Time give_up);
  // Refreshes every interval, passing each answer to `on_update`.
  void Start(Update on_update);
  // Whether any entry is a name that can resolve to other addresses later.
  bool dynamic() const;
  // The host:port an address was resolved from ("" for an address given as it is or never
  // seen): the name a worker's certificate carries, whatever pod IP it is dialled at.
  std::string NameOf(const std::string& address);

 private:
  ReplicaDiscovery(std::vector<WorkerEntry> entries, std::shared_ptr<AddressResolver> resolver,
                   absl::Duration interval);
  void Run(const Update& on_update);

  const std::vector<WorkerEntry> entries_;
  const std::shared_ptr<AddressResolver> resolver_;
  const absl::Duration interval_;
  absl::Mutex refresh_mutex_;  // one Refresh at a time
  std::vector<std::vector<std::string>> known_ ABSL_GUARDED_BY(refresh_mutex_);  // per entry
  absl::Mutex mutex_;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REPLICA_DISCOVERY_H_
