#include "services/coordinator/request_log.h"

#include <atomic>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"

namespace tandem {
namespace {

std::atomic<uint64_t> next_request{1};

std::string OutcomeName(const absl::Status& status) {
  if (status.ok()) return "ok";
  std::string name = absl::StatusCodeToString(status.code());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Outcomes the client caused (a bad request, a session it named wrongly, its own cancel) are
// routine; the rest say something about the service.
bool ClientCaused(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return true;
    default:
      return false;
  }
}

}  // namespace

RequestLog::RequestLog(const v1::GenerateRequest& request)
    : number_(next_request++),
      session_(request.session_id().empty() ? "-" : request.session_id()),
      start_(std::chrono::steady_clock::now()) {}

void RequestLog::Saw(const v1::GenerateResponse& response) {
  if (response.has_delta()) tokens_ += response.delta().token_ids_size();
  if (response.has_final()) {
    if (!response.final().session_id().empty()) session_ = response.final().session_id();
    finish_ = v1::FinishReason_Name(response.final().finish_reason());
  }
}

std::string RequestLog::Line(const absl::Status& status) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = absl::StrCat("request ", number_, " session=", session_,
                                  " outcome=", OutcomeName(status), " tokens=", tokens_);
  if (!finish_.empty()) absl::StrAppend(&line, " finish=", finish_);
  absl::StrAppend(&line, absl::StrFormat(" seconds=%.3f", seconds));
  if (!status.ok()) absl::StrAppend(&line, ": ", status.message());
  return line;
}

void RequestLog::Done(const absl::Status& status) {
  if (ClientCaused(status.code())) {
    LOG(INFO) << Line(status);
  } else {
    LOG(WARNING) << Line(status);
  }
}

}  // namespace tandem
