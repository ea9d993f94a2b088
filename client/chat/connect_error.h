// What a failed first call to a coordinator means, in the words of the person at the client:
// nothing listens on the port, the port is a worker's (not a coordinator's), the server wants
// TLS or a key the client did not bring, or it did not answer in time. gRPC's own text for
// each (an empty UNIMPLEMENTED, "Socket closed", a handshake failure) stays at the end as the
// detail.
//
// Thread-safe (no state).
#ifndef TANDEM_CLIENT_CHAT_CONNECT_ERROR_H_
#define TANDEM_CLIENT_CHAT_CONNECT_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"

namespace tandem {

// How the client called: what the explanation depends on.
struct ConnectAttempt {
  std::string address;
  bool tls = false;        // --tls-ca given
  bool api_key = false;    // a key sent
  absl::Duration timeout;  // the call's deadline
};

// The status of `attempt`'s failed DescribeModel call `status` (not OK), with the most specific
// code and a message that says what happened and what to try.
absl::Status ConnectError(const ConnectAttempt& attempt, const grpc::Status& status);

}  // namespace tandem

#endif  // TANDEM_CLIENT_CHAT_CONNECT_ERROR_H_
