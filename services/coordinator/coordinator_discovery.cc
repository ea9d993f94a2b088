// Coordinator::Create over worker entries (address_resolver.h): a DNS name's addresses become
// replicas, kept current by a ReplicaDiscovery that each pool owns, and the admission
// capacity follows the target replicas' sessions.
#include <chrono>
#include <thread>

#include "core/base/status_macros.h"
#include "glog/logging.h"
#include "services/coordinator/coordinator.h"

namespace tandem {
namespace {

// Clients of the addresses `discovery` gives. A pod dialled by IP is known (and its
// certificate checked) by the name it resolved from.
WorkerPool::ClientFactory ClientsFor(ReplicaDiscovery* discovery, const WorkerClientOptions& o) {
  return [o, discovery](const std::string& address) {
    WorkerClientOptions with_name = o;
    with_name.authority = discovery->NameOf(address);
    return std::make_unique<WorkerClient>(address, with_name);
  };
}

// The first replicas: every address of fixed entries (Init waits for each); of names, the
// addresses that answer now, so that a pod gone since the lookup does not hold up the start
// (it joins with a later lookup if it comes back). Until one answers, or `give_up`: all.
absl::StatusOr<std::vector<std::unique_ptr<WorkerClient>>> FirstReplicas(
    ReplicaDiscovery& discovery, const WorkerPool::ClientFactory& make, absl::Time give_up,
    absl::Duration probe_timeout) {
  std::vector<std::unique_ptr<WorkerClient>> answering;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<std::string> all, discovery.AwaitAddresses(give_up));
    std::vector<std::unique_ptr<WorkerClient>> clients;
    for (const std::string& a : all) clients.push_back(make(a));
    if (!discovery.dynamic()) return clients;
    for (auto& c : clients) {
      if (c->Describe(false, probe_timeout).ok()) answering.push_back(std::move(c));
    }
    if (!answering.empty() || absl::Now() >= give_up) {
      return answering.empty() ? std::move(clients) : std::move(answering);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(const CoordinatorOptions& options,
                                                                 CoordinatorMetrics* metrics) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<ReplicaDiscovery> target_discovery,
      ReplicaDiscovery::Create(options.targets, options.resolver, options.resolve_interval));
  ASSIGN_OR_RETURN(
      std::unique_ptr<ReplicaDiscovery> draft_discovery,
      ReplicaDiscovery::Create(options.drafts, options.resolver, options.resolve_interval));
  const absl::Time give_up = absl::Now() + options.worker_wait;
  const WorkerPool::ClientFactory make_target =
      ClientsFor(target_discovery.get(), options.worker_client);
  const WorkerPool::ClientFactory make_draft =
      ClientsFor(draft_discovery.get(), options.worker_client);
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<WorkerClient>> targets,
      FirstReplicas(*target_discovery, make_target, give_up, options.pool.probe_timeout));
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<WorkerClient>> drafts,
      FirstReplicas(*draft_discovery, make_draft, give_up, options.pool.probe_timeout));
  ASSIGN_OR_RETURN(std::unique_ptr<Coordinator> c,
                   Create(options, std::move(targets), std::move(drafts), metrics));
  // Pods come and go behind a headless Service: new addresses join, vanished ones retire.
  // The pools own the discoveries, which outlive the factories that point to them.
  if (target_discovery->dynamic()) {
    Coordinator* raw = c.get();  // ~Coordinator stops the discovery before anything goes
    c->targets_->Discover(std::move(target_discovery), make_target, [raw] {
      // The targets' sessions bound the requests that run at once, whoever holds them now.
      const int sessions = raw->targets_->SessionCapacity();
      if (sessions > 0 && sessions != raw->admission_->capacity()) {
        LOG(INFO) << "the targets now hold " << sessions << " sessions: up to " << sessions
                  << " concurrent requests";
        raw->admission_->SetCapacity(sessions);
      }
    });
  }
  if (draft_discovery->dynamic()) c->drafts_->Discover(std::move(draft_discovery), make_draft);
  return c;
}

}  // namespace tandem
