// Checks, before gRPC tries, that a listen address's port is free, so that a busy port is
// refused with one line naming the address (gRPC's own bind failure is a multi-line dump).
//
// Thread-safe (no state).
#ifndef TANDEM_WIRE_PORT_PROBE_H_
#define TANDEM_WIRE_PORT_PROBE_H_

#include <string>

#include "absl/status/status.h"

namespace tandem {

// kUnavailable naming `listen` when some local address it resolves to has its TCP port held
// by another socket (bind without SO_REUSEPORT fails with EADDRINUSE). OK for port 0, for
// addresses that are not HOST:PORT with a numeric port (gRPC judges those), and for other
// bind errors (gRPC reports those itself).
absl::Status CheckPortFree(const std::string& listen);

}  // namespace tandem

#endif  // TANDEM_WIRE_PORT_PROBE_H_
