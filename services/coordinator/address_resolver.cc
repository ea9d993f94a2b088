#include "services/coordinator/address_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace tandem {
namespace {

// Splits "host:port" or "[v6]:port"; false when either part is missing.
bool SplitHostPort(const std::string& host_port, std::string* host, std::string* port) {
  size_t colon;
  if (absl::StartsWith(host_port, "[")) {
    const size_t close = host_port.find(']');
    if (close == std::string::npos || close + 1 >= host_port.size() ||
        host_port[close + 1] != ':') {
      return false;
    }
    *host = host_port.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = host_port.rfind(':');
    if (colon == std::string::npos) return false;
    *host = host_port.substr(0, colon);
  }
  *port = host_port.substr(colon + 1);
  return !host->empty() && !port->empty();
}

bool IsNumericIp(const std::string& host) {
  unsigned char buffer[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// One getaddrinfo call's answer, shared by the caller and the thread that asks, which may
// outlive the caller's wait.
struct Lookup {
  absl::Mutex mutex;
  bool done = false;
  int error = 0;
  std::vector<std::string> addresses;
};

void RunLookup(const std::string& host, const std::string& port, Lookup* lookup) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* result = nullptr;
  const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &result);
  std::vector<std::string> addresses;
  for (struct addrinfo* a = error == 0 ? result : nullptr; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const struct sockaddr_in*>(a->ai_addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      addresses.push_back(absl::StrCat(text, ":", ntohs(in->sin_port)));
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(a->ai_addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      addresses.push_back(absl::StrCat("[", text, "]:", ntohs(in6->sin6_port)));
    }
  }
  if (result != nullptr) freeaddrinfo(result);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  absl::MutexLock lock(&lookup->mutex);
  lookup->error = error;
  lookup->addresses = std::move(addresses);
  lookup->done = true;
}

}  // namespace

absl::StatusOr<WorkerEntry> ParseWorkerEntry(const std::string& entry) {
  WorkerEntry e;
  e.entry = entry;
  std::string rest = entry;
  bool dns = false;
  if (absl::StartsWith(rest, "dns:")) {
    dns = true;
    rest = rest.substr(4);
    if (absl::StartsWith(rest, "//")) {  // dns://[authority]/host:port
      const size_t slash = rest.find('/', 2);
      rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    }
  } else if (absl::StartsWith(rest, "unix:") || absl::StartsWith(rest, "ipv4:") ||
             absl::StartsWith(rest, "ipv6:")) {
    e.name = entry;
    return e;
  }
  std::string host, port;
  if (!SplitHostPort(rest, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker address '", entry, "' is not host:port or dns:///host:port"));
  }
  e.name = rest;
  e.resolved = dns || !IsNumericIp(host);
  return e;
}

absl::StatusOr<std::vector<std::string>> GetaddrinfoResolver::Resolve(
    const std::string& host_port) {
  std::string host, port;
  if (!SplitHostPort(host_port, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat("'", host_port, "' is not host:port"));
  }
  auto lookup = std::make_shared<Lookup>();
  // Detached: a lookup that outlasts the timeout finishes on its own and is dropped.
  std::thread([host, port, lookup] { RunLookup(host, port, lookup.get()); }).detach();
  absl::MutexLock lock(&lookup->mutex);
  if (!lookup->mutex.AwaitWithTimeout(absl::Condition(&lookup->done), timeout_)) {
    return absl::DeadlineExceededError(absl::StrCat("resolving '", host_port, "' took longer than ",
                                                    absl::FormatDuration(timeout_)));
  }
  const bool none = lookup->error == EAI_NONAME || lookup->error == EAI_NODATA;
  if (none || (lookup->error == 0 && lookup->addresses.empty())) {
    return absl::NotFoundError(absl::StrCat("'", host, "' has no address"));
  }
  if (lookup->error != 0) {
    return absl::UnavailableError(
        absl::StrCat("resolving '", host_port, "': ", gai_strerror(lookup->error)));
  }
  return lookup->addresses;
}

}  // namespace tandem
