#include "wire/worker_error.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"
#include "wire/grpc_status.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;

// Every error code a worker can answer with comes back as itself, message and all.
TEST(WorkerErrorTest, EveryErrorCodeRoundTrips) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status sent(static_cast<absl::StatusCode>(code), "guess 2: q(g) = 0");
    v1::RequestError error;
    SetRequestError(sent, &error);
    EXPECT_EQ(error.code(), code);
    EXPECT_THAT(FromRequestError(error), StatusIs(sent.code(), "guess 2: q(g) = 0")) << code;
  }
}

TEST(WorkerErrorTest, TheDecoderPutsItsContextBeforeTheMessage) {
  v1::RequestError error;
  SetRequestError(absl::OutOfRangeError("position 9000 is past the context"), &error);
  EXPECT_THAT(FromRequestError(error, "worker 127.0.0.1:5: "),
              StatusIs(absl::StatusCode::kOutOfRange,
                       "worker 127.0.0.1:5: position 9000 is past the context"));
}

// The message travels as any error message does: well-formed UTF-8, cut to the wire's limit.
TEST(WorkerErrorTest, TheMessageIsTheWiresMessage) {
  const std::string long_message = absl::StrCat("bad \xFF byte ", std::string(4000, 'x'));
  v1::RequestError error;
  SetRequestError(absl::InvalidArgumentError(long_message), &error);
  EXPECT_EQ(error.message(), WireMessage(long_message));
  EXPECT_LE(error.message().size(), kMaxWireMessageBytes);
  EXPECT_THAT(FromRequestError(error),
              StatusIs(absl::StatusCode::kInvalidArgument, WireMessage(long_message)));
}

// An error is never OK: an unset code 0, and codes no status has, decode as kUnknown.
TEST(WorkerErrorTest, UnsetAndUnknownCodesDecodeAsUnknown) {
  for (int code : {0, -1, 17, 99}) {
    v1::RequestError error;
    error.set_code(code);
    error.set_message("m");
    EXPECT_THAT(FromRequestError(error), StatusIs(absl::StatusCode::kUnknown, "m")) << code;
  }
}

}  // namespace
}  // namespace tandem
