// The one mapping from absl::Status to an HTTP error of the OpenAI-compatible API: status,
// OpenAI's error type and a code, and the body {"error": {"message", "type", "param",
// "code"}}; `param` names the request field a 400 is about when the parser knows it. The message is the public one (PublicStatus redacts it first) cut as gRPC's
// WireMessage cuts it: well-formed UTF-8, at most 1024 bytes.
//
//   kInvalidArgument, kFailedPrecondition -> 400    kOutOfRange -> 400 context_length_exceeded
//   a request limit (RequestLimits)        -> 413    kNotFound -> 404
//   kUnauthenticated -> 401   kPermissionDenied -> 403   kAborted, kAlreadyExists -> 409
//   kResourceExhausted -> 429 (the admission queue is full, every named session busy)
//   kUnavailable -> 503 (no ready target)   kDeadlineExceeded -> 504   kCancelled -> 499
//   kUnimplemented -> 501   anything else -> 500
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_HTTP_ERROR_H_
#define TANDEM_SERVICES_COORDINATOR_HTTP_ERROR_H_

#include <string>

#include "absl/status/status.h"

namespace tandem {

struct HttpError {
  int status = 500;
  std::string type;     // OpenAI's error type, e.g. "invalid_request_error"
  std::string code;     // a short machine-readable code, e.g. "over_capacity"
  std::string message;  // well-formed UTF-8, at most 1024 bytes
  std::string param;    // the request field the error is about (openai_fields.h); may be empty
};

// Where a failed status came from, when that decides the HTTP status.
enum class ErrorOrigin {
  kRequest,       // parsing the body, or the coordinator
  kRequestLimit,  // CheckGenerateLimits: a field over its size limit (413)
};

// `status` must not be OK.
HttpError ToHttpError(const absl::Status& status, ErrorOrigin origin = ErrorOrigin::kRequest);

// {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}; param null when the
// error names no field.
std::string HttpErrorBody(const HttpError& error);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_HTTP_ERROR_H_
