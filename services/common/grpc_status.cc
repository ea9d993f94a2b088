#include "services/common/grpc_status.h"

#include <string>

namespace tandem {
namespace {

// absl::StatusCode and grpc::StatusCode both copy google.rpc.Code: 0..16.
constexpr int kLastCanonicalCode = 16;

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  if (code < 0 || code > kLastCanonicalCode) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return FromWireCode(static_cast<int>(status.error_code()), status.error_message());
}

absl::Status FromWireCode(int code, std::string message) {
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > kLastCanonicalCode) return absl::UnknownError(message);
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace tandem
