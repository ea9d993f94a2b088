#include "services/coordinator/request_log.h"

#include <atomic>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "google/protobuf/descriptor.h"

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

// The name of the constraint's kind (its field's), or empty without one.
std::string ConstraintKind(const v1::Constraint& constraint) {
  if (constraint.kind_case() == v1::Constraint::KIND_NOT_SET) return "";
  const google::protobuf::FieldDescriptor* field =
      constraint.GetDescriptor()->FindFieldByNumber(constraint.kind_case());
  return field != nullptr ? field->name() : "unknown";
}

}  // namespace

RequestLog::RequestLog(const v1::GenerateRequest& request)
    : number_(next_request++),
      session_(request.session_id().empty() ? "-" : request.session_id()),
      constraint_(ConstraintKind(request.constraint())),
      start_(std::chrono::steady_clock::now()) {}

void RequestLog::Saw(const v1::GenerateResponse& response) {
  if (response.has_delta()) tokens_ += response.delta().token_ids_size();
  if (response.has_final()) {
    if (!response.final().session_id().empty()) session_ = response.final().session_id();
    finish_ = v1::FinishReason_Name(response.final().finish_reason());
    forced_ = response.final().speculation().forced_tokens();
  }
}

std::string RequestLog::Line(const absl::Status& status) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = absl::StrCat("request ", number_, " session=", session_);
  if (!constraint_.empty()) absl::StrAppend(&line, " constraint=", constraint_);
  absl::StrAppend(&line, " outcome=", OutcomeName(status), " tokens=", tokens_);
  if (!finish_.empty()) absl::StrAppend(&line, " finish=", finish_);
  if (forced_ > 0) absl::StrAppend(&line, " forced=", forced_);
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
