#include "services/common/grpc_status.h"

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;

struct CodePair {
  absl::StatusCode absl_code;
  grpc::StatusCode grpc_code;
};

class GrpcStatusTest : public ::testing::TestWithParam<CodePair> {};

TEST_P(GrpcStatusTest, CodeAndMessageSurviveBothWays) {
  const CodePair& c = GetParam();
  const absl::Status original(c.absl_code, "tensor 'blk.0.attn_q.weight' past end of file");
  const grpc::Status wire = ToGrpcStatus(original);
  EXPECT_EQ(wire.error_code(), c.grpc_code);
  EXPECT_EQ(wire.error_message(), "tensor 'blk.0.attn_q.weight' past end of file");
  EXPECT_THAT(FromGrpcStatus(wire),
              StatusIs(c.absl_code, "tensor 'blk.0.attn_q.weight' past end of file"));
}

INSTANTIATE_TEST_SUITE_P(
    AllCanonicalCodes, GrpcStatusTest,
    ::testing::Values(
        CodePair{absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
        CodePair{absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
        CodePair{absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
        CodePair{absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
        CodePair{absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
        CodePair{absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
        CodePair{absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
        CodePair{absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
        CodePair{absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
        CodePair{absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
        CodePair{absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
        CodePair{absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
        CodePair{absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
        CodePair{absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
        CodePair{absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
        CodePair{absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED}),
    [](const ::testing::TestParamInfo<CodePair>& info) {
      return absl::StatusCodeToString(info.param.absl_code);
    });

TEST(GrpcStatusConversionTest, OkStaysOkWithNoMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::OkStatus()).error_message(), "");
  EXPECT_THAT(FromGrpcStatus(grpc::Status::OK), IsOk());
}

TEST(GrpcStatusConversionTest, NonCanonicalAbslCodesBecomeUnknownOnTheWire) {
  // absl::StatusCode has a fixed underlying int: 42 is a valid (non-canonical) value.
  const absl::Status odd(static_cast<absl::StatusCode>(42), "odd");
  EXPECT_EQ(ToGrpcStatus(odd).error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "odd");
}

// Unknown wire codes are integers here: a grpc::StatusCode(99) would be outside the enum's
// range (undefined behaviour, which UBSan reports).
struct WireCase {
  int code;
  absl::StatusCode expected;
};

void PrintTo(const WireCase& c, std::ostream* os) { *os << c.code; }

class FromWireCodeTest : public ::testing::TestWithParam<WireCase> {};

TEST_P(FromWireCodeTest, MapsCanonicalCodesAndMakesTheRestUnknown) {
  const WireCase& c = GetParam();
  EXPECT_THAT(FromWireCode(c.code, "far"), StatusIs(c.expected, "far"));
}

INSTANTIATE_TEST_SUITE_P(Codes, FromWireCodeTest,
                         ::testing::Values(WireCase{99, absl::StatusCode::kUnknown},
                                           WireCase{17, absl::StatusCode::kUnknown},
                                           WireCase{-1, absl::StatusCode::kUnknown},
                                           WireCase{1 << 30, absl::StatusCode::kUnknown},
                                           WireCase{5, absl::StatusCode::kNotFound},
                                           WireCase{16, absl::StatusCode::kUnauthenticated}),
    [](const ::testing::TestParamInfo<WireCase>& info) {
      const int code = info.param.code;
      return code < 0 ? "Minus" + std::to_string(-code) : "Code" + std::to_string(code);
    });

TEST(FromWireCodeOkTest, ZeroIsOk) { EXPECT_THAT(FromWireCode(0, ""), IsOk()); }

}  // namespace
}  // namespace tandem
