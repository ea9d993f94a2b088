#include "wire/port_probe.h"

#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem {
namespace {

// Splits "host:port" or "[v6]:port"; false if there is no numeric port.
bool SplitHostPort(absl::string_view address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return false;
  absl::string_view h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  *host = std::string(h);
  return absl::SimpleAtoi(address.substr(colon + 1), port);
}

// True if binding `addr` fails because the port is held.
bool PortHeld(const addrinfo& addr) {
  const int fd = socket(addr.ai_family, addr.ai_socktype, addr.ai_protocol);
  if (fd < 0) return false;
  // SO_REUSEADDR as gRPC sets it (TIME_WAIT leftovers are no conflict); no SO_REUSEPORT.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool held = bind(fd, addr.ai_addr, addr.ai_addrlen) != 0 && errno == EADDRINUSE;
  close(fd);
  return held;
}

}  // namespace

absl::Status CheckPortFree(const std::string& listen) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(listen, &host, &port) || port <= 0 || port > 65535) return absl::OkStatus();
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0) {
    return absl::OkStatus();  // gRPC reports an unresolvable host itself
  }
  bool held = false;
  for (const addrinfo* a = found; a != nullptr && !held; a = a->ai_next) held = PortHeld(*a);
  freeaddrinfo(found);
  if (held) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen, ": the port is already in use"));
  }
  return absl::OkStatus();
}

}  // namespace tandem
