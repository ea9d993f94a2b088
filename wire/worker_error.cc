#include "wire/worker_error.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wire/grpc_status.h"

namespace tandem {

void SetRequestError(const absl::Status& status, v1::RequestError* error) {
  error->set_code(static_cast<int>(status.code()));
  // A proto3 string: bytes that are not UTF-8 would make the whole response fail to parse.
  error->set_message(WireMessage(status.message()));
}

absl::Status FromRequestError(const v1::RequestError& error, absl::string_view context) {
  std::string message = absl::StrCat(context, error.message());
  if (error.code() == 0) return absl::UnknownError(message);
  return FromWireCode(error.code(), std::move(message));
}

}  // namespace tandem
