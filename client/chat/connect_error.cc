#include "client/chat/connect_error.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "wire/grpc_status.h"

namespace tandem {
namespace {

// gRPC's words for a connection that a TLS server closed on a plaintext client (or a reset).
bool ClosedEarly(const std::string& detail) {
  return absl::StrContains(detail, "Socket closed") ||
         absl::StrContains(detail, "Connection reset") ||
         absl::StrContains(detail, "connection closed") || absl::StrContains(detail, "Broken pipe");
}

bool HandshakeFailed(const std::string& detail) {
  const std::string lower = absl::AsciiStrToLower(detail);
  return absl::StrContains(lower, "handshake") || absl::StrContains(lower, "ssl") ||
         absl::StrContains(lower, "tls");
}

std::string Detail(const grpc::Status& status) {
  return absl::StrCat("(", absl::StatusCodeToString(FromGrpcStatus(status).code()),
                      status.error_message().empty() ? "" : ": ", status.error_message(), ")");
}

absl::Status Unavailable(const ConnectAttempt& a, const grpc::Status& status) {
  const std::string& detail = status.error_message();
  const std::string where = absl::StrCat("coordinator ", a.address);
  if (absl::StrContains(detail, "Connection refused")) {
    return absl::UnavailableError(
        absl::StrCat(where,
                     " refused the connection: nothing listens there (is the coordinator running, "
                     "and is this its --listen port?) ",
                     Detail(status)));
  }
  if (a.tls && HandshakeFailed(detail)) {
    return absl::UnavailableError(
        absl::StrCat("the TLS handshake with ", where,
                     " failed: if it serves plaintext, drop --tls-ca; "
                     "else check that --tls-ca is the CA that signed its certificate ",
                     Detail(status)));
  }
  if (!a.tls && (ClosedEarly(detail) || HandshakeFailed(detail))) {
    return absl::UnavailableError(
        absl::StrCat(where,
                     " closed the connection without answering: if it serves TLS, give its CA "
                     "certificate with --tls-ca ",
                     Detail(status)));
  }
  return absl::UnavailableError(absl::StrCat(where, " is unavailable ", Detail(status)));
}

}  // namespace

absl::Status ConnectError(const ConnectAttempt& a, const grpc::Status& status) {
  const std::string where = absl::StrCat("coordinator ", a.address);
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable(a, status);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::UnavailableError(absl::StrCat(
          where, " did not answer DescribeModel within ", absl::FormatDuration(a.timeout),
          " (a frozen process, or a port that is not gRPC?) ", Detail(status)));
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::FailedPreconditionError(
          absl::StrCat(a.address,
                       " is not a Tandem coordinator: it does not serve tandem.v1.Generator (a "
                       "worker's port? point --server at the coordinator's --listen address) ",
                       Detail(status)));
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::UnauthenticatedError(
          absl::StrCat(where,
                       a.api_key ? " refused the API key: check TANDEM_API_KEY "
                                 : " wants an API key: set TANDEM_API_KEY to one of its keys ",
                       Detail(status)));
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::PermissionDeniedError(absl::StrCat(
          where, " refused this client (its certificate or key is not allowed) ", Detail(status)));
    default:
      return absl::Status(FromGrpcStatus(status).code(),
                          absl::StrCat(where, ": DescribeModel failed ", Detail(status)));
  }
}

}  // namespace tandem
