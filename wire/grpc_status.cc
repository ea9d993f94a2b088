#include "wire/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/utf8_repair.h"

namespace tandem {
namespace {

// absl::StatusCode and grpc::StatusCode both copy google.rpc.Code: 0..16.
constexpr int kLastCanonicalCode = 16;

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string WireMessage(absl::string_view message) {
  std::string text = utf8::ReplaceInvalid(message);
  if (text.size() <= kMaxWireMessageBytes) return text;
  const std::string marker = absl::StrCat("\xE2\x80\xA6 [cut from ", text.size(), " bytes]");
  size_t keep = kMaxWireMessageBytes - marker.size();
  // Well-formed UTF-8: backing up over continuation bytes lands on a character's start.
  while (keep > 0 && IsContinuationByte(text[keep])) --keep;
  text.resize(keep);
  text += marker;
  return text;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  if (code < 0 || code > kLastCanonicalCode) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, WireMessage(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), WireMessage(status.message()));
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
