// What a --target/--draft entry names: one worker, or every address a DNS name resolves to
// (a Kubernetes headless Service lists one A record per ready pod).
//
// Entries: `dns:///host:port` or `dns://authority/host:port` (the authority, a DNS server,
// is not used: the system resolver answers), or `host:port` with a host name, resolve to one
// replica per address; `host:port` with a numeric IP (`[v6]:port` too) and other gRPC
// schemes (`unix:`, `ipv4:`, `ipv6:`) name one worker as they are.
//
// AddressResolver is the interface a test replaces; GetaddrinfoResolver asks the system
// (getaddrinfo) on a thread of its own and gives up after its timeout, so a slow DNS server
// costs the caller no more than that. Thread-safe.
#ifndef TANDEM_SERVICES_COORDINATOR_ADDRESS_RESOLVER_H_
#define TANDEM_SERVICES_COORDINATOR_ADDRESS_RESOLVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tandem {

struct WorkerEntry {
  std::string entry;      // as given
  std::string name;       // host:port to resolve, or the address itself when !resolved
  bool resolved = false;  // true: one replica per address `name` resolves to
};

// kInvalidArgument naming the entry when it has no host or no port.
absl::StatusOr<WorkerEntry> ParseWorkerEntry(const std::string& entry);

class AddressResolver {
 public:
  virtual ~AddressResolver() = default;
  // The addresses ("ip:port", "[ip6]:port") of `host_port`, sorted and without duplicates.
  // kNotFound when the name has no address, kDeadlineExceeded when the answer is late,
  // kUnavailable when the resolver fails.
  virtual absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host_port) = 0;
};

class GetaddrinfoResolver final : public AddressResolver {
 public:
  explicit GetaddrinfoResolver(absl::Duration timeout = absl::Seconds(5)) : timeout_(timeout) {}
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host_port) override;

 private:
  absl::Duration timeout_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_ADDRESS_RESOLVER_H_
