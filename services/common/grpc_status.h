// The one conversion between absl::Status (everything below the RPC layer) and grpc::Status
// (the wire). Handlers never map codes by hand.
#ifndef TANDEM_SERVICES_COMMON_GRPC_STATUS_H_
#define TANDEM_SERVICES_COMMON_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace tandem {

// Same code (the numeric values agree by design), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse: a grpc::Status from a call becomes an absl::Status with the same code and
// message (an out-of-range code becomes kUnknown).
absl::Status FromGrpcStatus(const grpc::Status& status);

// A status code as an integer (from the wire: a grpc_status_code, a RequestError.code) with
// its message. Codes outside 0..16 become kUnknown. Unknown codes are handled here, as
// integers: a grpc::StatusCode outside its enumerators' range is undefined behaviour.
absl::Status FromWireCode(int code, std::string message);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COMMON_GRPC_STATUS_H_
