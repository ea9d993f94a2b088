#include "wire/grpc_status.h"

#include <chrono>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/base/utf8.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tandem/v1/worker.grpc.pb.h"

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
                           return code < 0 ? "Minus" + std::to_string(-code)
                                           : "Code" + std::to_string(code);
                         });

TEST(FromWireCodeOkTest, ZeroIsOk) { EXPECT_THAT(FromWireCode(0, ""), IsOk()); }

TEST(WireMessageTest, ShortWellFormedMessagesPassUnchanged) {
  EXPECT_EQ(WireMessage("no session 'caf\xC3\xA9'"), "no session 'caf\xC3\xA9'");
  EXPECT_EQ(WireMessage(""), "");
}

TEST(WireMessageTest, InvalidUtf8BecomesReplacementCharacters) {
  // A session id of raw bytes quoted in an error: each ill-formed subpart is one U+FFFD.
  EXPECT_EQ(WireMessage("no session '\xFF\xE2\x82'"), "no session '\xEF\xBF\xBD\xEF\xBF\xBD'");
  const grpc::Status wire =
      ToGrpcStatus(absl::NotFoundError("stop string '\xC0\xAF' and id '\xED\xA0\x80'"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(utf8::Validate(wire.error_message()).ok()) << wire.error_message();
}

TEST(WireMessageTest, AHundredKilobyteMessageIsCutAtACharacterBoundaryAndKeepsItsCode) {
  // Two-byte characters after an odd-length prefix: a cut at a byte count would split one.
  std::string message = "prompt 'x";
  for (int i = 0; i < 51200; ++i) message += "\xC3\xA9";
  message += "' is too long";
  ASSERT_GT(message.size(), 100000u);
  const grpc::Status wire = ToGrpcStatus(absl::InvalidArgumentError(message));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string& cut = wire.error_message();
  EXPECT_LE(cut.size(), kMaxWireMessageBytes);
  EXPECT_GT(cut.size(), kMaxWireMessageBytes - 8);
  EXPECT_TRUE(utf8::Validate(cut).ok());
  EXPECT_TRUE(absl::StartsWith(cut, "prompt 'x\xC3\xA9\xC3\xA9")) << cut.substr(0, 20);
  EXPECT_TRUE(
      absl::EndsWith(cut, absl::StrCat("\xE2\x80\xA6 [cut from ", message.size(), " bytes]")))
      << cut.substr(cut.size() - 40);
}

// Over a real socket, a message past the peer's metadata limit would not arrive with its
// code. A Worker whose Tokenize fails with an error echoing a 100 KB request.
class EchoingWorker final : public v1::Worker::Service {
 public:
  grpc::Status Tokenize(grpc::ServerContext*, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse*) override {
    return ToGrpcStatus(absl::InvalidArgumentError("cannot tokenize '" + request->text() + "'"));
  }
};

TEST(WireMessageTest, AHundredKilobyteErrorArrivesOverASocketWithItsOwnCode) {
  EchoingWorker service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  auto stub = v1::Worker::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::TokenizeRequest request;
  request.set_text(std::string(100 * 1024, 'a'));
  v1::TokenizeResponse response;
  const grpc::Status status = stub->Tokenize(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_TRUE(absl::StartsWith(status.error_message(), "cannot tokenize 'aaaa"));
  EXPECT_LE(status.error_message().size(), kMaxWireMessageBytes);
  server->Shutdown();
}

}  // namespace
}  // namespace tandem
