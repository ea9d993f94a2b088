// The one conversion between absl::Status (everything below the RPC layer) and grpc::Status
// (the wire). Handlers never map codes by hand.
#ifndef TANDEM_SERVICES_COMMON_GRPC_STATUS_H_
#define TANDEM_SERVICES_COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace tandem {

// Same code (the numeric values agree by design), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse: a grpc::Status from a call becomes an absl::Status with the same code and
// message (an out-of-range code becomes kUnknown).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COMMON_GRPC_STATUS_H_
