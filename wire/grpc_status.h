// The one conversion between absl::Status (everything below the RPC layer) and grpc::Status
// (the wire). Handlers never map codes by hand.
#ifndef TANDEM_WIRE_GRPC_STATUS_H_
#define TANDEM_WIRE_GRPC_STATUS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace tandem {

// The longest error message that goes on the wire, in bytes. A message travels in the
// grpc-message trailer, percent-encoded (up to 3 bytes per byte), and a peer refuses
// metadata past its limit (8 KB by default): an error echoing a large user string would then
// arrive as RESOURCE_EXHAUSTED or INTERNAL instead of its own code.
inline constexpr size_t kMaxWireMessageBytes = 1024;

// What `message` becomes on the wire: well-formed UTF-8 (each ill-formed subpart becomes
// U+FFFD, as utf8::ReplaceInvalid does; clients decode messages as UTF-8, and a proto3 string
// holding other bytes fails to parse) and at most kMaxWireMessageBytes, cut at a character
// boundary and marked with "… [cut from N bytes]".
std::string WireMessage(absl::string_view message);

// Same code (the numeric values agree by design), the message as WireMessage makes it.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse: a grpc::Status from a call becomes an absl::Status with the same code and
// message (an out-of-range code becomes kUnknown).
absl::Status FromGrpcStatus(const grpc::Status& status);

// A status code as an integer (from the wire: a grpc_status_code, a RequestError.code:
// worker_error.h) with its message. Codes outside 0..16 become kUnknown. Unknown codes are handled here, as
// integers: a grpc::StatusCode outside its enumerators' range is undefined behaviour.
absl::Status FromWireCode(int code, std::string message);

}  // namespace tandem

#endif  // TANDEM_WIRE_GRPC_STATUS_H_
