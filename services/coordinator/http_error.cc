#include "services/coordinator/http_error.h"

#include "services/coordinator/openai_fields.h"

#include "core/base/json.h"
#include "wire/grpc_status.h"

namespace tandem {
namespace {

struct Mapping {
  int status;
  const char* type;
  const char* code;
};

Mapping MappingOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return {400, "invalid_request_error", "invalid_request"};
    case absl::StatusCode::kOutOfRange:
      return {400, "invalid_request_error", "context_length_exceeded"};
    case absl::StatusCode::kNotFound:
      return {404, "invalid_request_error", "not_found"};
    case absl::StatusCode::kUnauthenticated:
      return {401, "authentication_error", "invalid_api_key"};
    case absl::StatusCode::kPermissionDenied:
      return {403, "permission_error", "permission_denied"};
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
      return {409, "conflict_error", "conflict"};
    case absl::StatusCode::kResourceExhausted:
      return {429, "rate_limit_error", "over_capacity"};
    case absl::StatusCode::kUnavailable:
      return {503, "server_error", "unavailable"};
    case absl::StatusCode::kDeadlineExceeded:
      return {504, "timeout_error", "timeout"};
    case absl::StatusCode::kCancelled:
      return {499, "cancelled", "cancelled"};  // the client went away: nobody reads it
    case absl::StatusCode::kUnimplemented:
      return {501, "invalid_request_error", "unimplemented"};
    default:
      return {500, "server_error", "internal"};
  }
}

}  // namespace

HttpError ToHttpError(const absl::Status& status, ErrorOrigin origin) {
  Mapping m = MappingOf(status.code());
  if (origin == ErrorOrigin::kRequestLimit && status.code() == absl::StatusCode::kInvalidArgument) {
    m = {413, "invalid_request_error", "request_too_large"};
  }
  return {m.status, m.type, m.code, WireMessage(status.message()),
          openai::ErrorParam(status).value_or("")};
}

std::string HttpErrorBody(const HttpError& error) {
  json::Value param = error.param.empty() ? json::Value(nullptr) : json::Value(error.param);
  json::Object e{{"message", error.message},
                 {"type", error.type},
                 {"param", std::move(param)},
                 {"code", error.code}};
  return json::Serialize(json::Object{{"error", std::move(e)}});
}

}  // namespace tandem
