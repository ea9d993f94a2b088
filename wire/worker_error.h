// A worker's in-band error: a request of an Attach stream that fails is answered with a
// RequestError (worker.proto) and the session lives on. The worker encodes it here, the
// coordinator decodes it here: one code mapping for both ends.
//
// The code is absl::StatusCode's number (the same as google.rpc.Code's and grpc::StatusCode's);
// the message is what goes on the wire for any error (WireMessage, grpc_status.h):
// well-formed UTF-8 of at most kMaxWireMessageBytes.
#ifndef TANDEM_WIRE_WORKER_ERROR_H_
#define TANDEM_WIRE_WORKER_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

// Encodes a failed `status` (the worker).
void SetRequestError(const absl::Status& status, v1::RequestError* error);

// Decodes (the coordinator): the same code and message, `context` (e.g. "worker ADDR: ")
// before the message. An error is never OK: code 0 (unset) and codes outside 1..16 become
// kUnknown.
absl::Status FromRequestError(const v1::RequestError& error, absl::string_view context = "");

}  // namespace tandem

#endif  // TANDEM_WIRE_WORKER_ERROR_H_
