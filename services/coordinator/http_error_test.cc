#include "services/coordinator/http_error.h"

#include <ostream>
#include <string>

#include "core/base/json.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct Case {
  absl::StatusCode code;
  ErrorOrigin origin;
  int status;
  const char* type;
  const char* error_code;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << absl::StatusCodeToString(c.code)
      << (c.origin == ErrorOrigin::kRequestLimit ? "+limit" : "");
}

constexpr ErrorOrigin kReq = ErrorOrigin::kRequest;
constexpr ErrorOrigin kLimit = ErrorOrigin::kRequestLimit;

const Case kCases[] = {
    {absl::StatusCode::kInvalidArgument, kReq, 400, "invalid_request_error", "invalid_request"},
    {absl::StatusCode::kInvalidArgument, kLimit, 413, "invalid_request_error", "request_too_large"},
    {absl::StatusCode::kOutOfRange, kLimit, 400, "invalid_request_error",
     "context_length_exceeded"},
    {absl::StatusCode::kOutOfRange, kReq, 400, "invalid_request_error", "context_length_exceeded"},
    {absl::StatusCode::kFailedPrecondition, kReq, 400, "invalid_request_error", "invalid_request"},
    {absl::StatusCode::kNotFound, kReq, 404, "invalid_request_error", "not_found"},
    {absl::StatusCode::kUnauthenticated, kReq, 401, "authentication_error", "invalid_api_key"},
    {absl::StatusCode::kPermissionDenied, kReq, 403, "permission_error", "permission_denied"},
    {absl::StatusCode::kAborted, kReq, 409, "conflict_error", "conflict"},
    {absl::StatusCode::kResourceExhausted, kReq, 429, "rate_limit_error", "over_capacity"},
    {absl::StatusCode::kUnavailable, kReq, 503, "server_error", "unavailable"},
    {absl::StatusCode::kDeadlineExceeded, kReq, 504, "timeout_error", "timeout"},
    {absl::StatusCode::kCancelled, kReq, 499, "cancelled", "cancelled"},
    {absl::StatusCode::kUnimplemented, kReq, 501, "invalid_request_error", "unimplemented"},
    {absl::StatusCode::kInternal, kReq, 500, "server_error", "internal"},
    {absl::StatusCode::kDataLoss, kReq, 500, "server_error", "internal"},
    {absl::StatusCode::kUnknown, kReq, 500, "server_error", "internal"},
};

class HttpErrorTest : public ::testing::TestWithParam<Case> {};

TEST_P(HttpErrorTest, MapsTheCodeToItsHttpStatusTypeAndCode) {
  const Case& c = GetParam();
  const HttpError e = ToHttpError(absl::Status(c.code, "what went wrong"), c.origin);
  EXPECT_EQ(e.status, c.status);
  EXPECT_EQ(e.type, c.type);
  EXPECT_EQ(e.code, c.error_code);
  EXPECT_EQ(e.message, "what went wrong");
}

INSTANTIATE_TEST_SUITE_P(AllCodes, HttpErrorTest, ::testing::ValuesIn(kCases));

TEST(HttpErrorBodyTest, IsOpenAisErrorShape) {
  const HttpError e = ToHttpError(absl::NotFoundError("the model 'x' does not exist"));
  absl::StatusOr<json::Value> body = json::Parse(HttpErrorBody(e));
  ASSERT_TRUE(body.ok()) << body.status();
  const json::Value* error = body->as_object().Find("error");
  ASSERT_NE(error, nullptr);
  ASSERT_TRUE(error->is_object());
  const json::Object& o = error->as_object();
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o.Find("message")->as_string(), "the model 'x' does not exist");
  EXPECT_EQ(o.Find("type")->as_string(), "invalid_request_error");
  EXPECT_TRUE(o.Find("param")->is_null());
  EXPECT_EQ(o.Find("code")->as_string(), "not_found");
}

TEST(HttpErrorBodyTest, MessageIsValidUtf8AndCutAsOnTheGrpcWire) {
  const std::string huge(5000, 'x');
  const HttpError e = ToHttpError(absl::InvalidArgumentError("bad \xff byte " + huge));
  EXPECT_LE(e.message.size(), 1024u);
  EXPECT_EQ(e.message.substr(0, 13), "bad \xEF\xBF\xBD byte ");  // U+FFFD
  EXPECT_TRUE(json::Parse(HttpErrorBody(e)).ok());
}

}  // namespace
}  // namespace tandem
