// What tandem-chat --server says when it cannot talk to a coordinator: each failure in the
// user's own words, from gRPC's statuses (a table) and over real loopback sockets (nothing
// listening, a worker's port, TLS on one side only, a missing key).
#include "client/chat/connect_error.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/chat/remote_chat.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_macros.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "wire/tls_credentials.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct Case {
  const char* name;
  bool tls, key;
  grpc::Status status;
  absl::StatusCode code;
  const char* says;
};

const Case kCases[] = {
    {"Refused", false, false,
     grpc::Status(grpc::StatusCode::UNAVAILABLE,
                  "failed to connect to all addresses; last error: UNKNOWN: "
                  "ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused"),
     absl::StatusCode::kUnavailable, "refused the connection: nothing listens there"},
    {"WorkerPort", false, false, grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""),
     absl::StatusCode::kFailedPrecondition, "is not a Tandem coordinator"},
    {"PlaintextToTls", false, false, grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"),
     absl::StatusCode::kUnavailable, "if it serves TLS, give its CA certificate with --tls-ca"},
    {"TlsToPlaintext", true, false,
     grpc::Status(grpc::StatusCode::UNAVAILABLE,
                  "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:5: "
                  "Ssl handshake failed: SSL_ERROR_SSL: error:100000f7:SSL routines:"
                  "OPENSSL_internal:WRONG_VERSION_NUMBER"),
     absl::StatusCode::kUnavailable, "if it serves plaintext, drop --tls-ca"},
    {"NoKey", false, false, grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing key"),
     absl::StatusCode::kUnauthenticated, "wants an API key: set TANDEM_API_KEY"},
    {"WrongKey", false, true, grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown key"),
     absl::StatusCode::kUnauthenticated, "refused the API key"},
    {"Silent", false, false, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline"),
     absl::StatusCode::kUnavailable, "did not answer DescribeModel within 2s"},
    {"Other", false, false, grpc::Status(grpc::StatusCode::INTERNAL, "boom"),
     absl::StatusCode::kInternal, "DescribeModel failed (INTERNAL: boom)"},
};

class ConnectErrorTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConnectErrorTest, SaysWhatHappenedAndNamesTheAddress) {
  const Case& c = GetParam();
  EXPECT_THAT(ConnectError({"127.0.0.1:5", c.tls, c.key, absl::Seconds(2)}, c.status),
              StatusIs(c.code, AllOf(HasSubstr("127.0.0.1:5"), HasSubstr(c.says))));
}

INSTANTIATE_TEST_SUITE_P(Statuses, ConnectErrorTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// A loopback port that was bound and closed: nothing listens on it.
std::string ClosedPort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(s, reinterpret_cast<sockaddr*>(&address), &length);
  close(s);
  return absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
}

// A gRPC server on loopback serving only tandem.v1.Worker (a worker's port), plaintext or TLS.
struct Server {
  explicit Server(std::shared_ptr<grpc::ServerCredentials> credentials) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port);
    builder.RegisterService(&worker);
    server = builder.BuildAndStart();
  }
  ~Server() { server->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port); }

  v1::Worker::Service worker;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

absl::Status Connect(const std::string& address, const RemoteChatOptions& remote) {
  return RemoteChat::Create(address, ChatOptions(), remote).status();
}

absl::StatusOr<TlsPem> DevCerts() {
  ASSIGN_OR_RETURN(std::string dir, testing::MakeDevCerts());
  return ReadTlsFiles({dir + "/server.crt", dir + "/server.key", dir + "/ca.crt"});
}

TEST(ConnectErrorSocketTest, NothingListeningIsRefusedNotATimeout) {
  RemoteChatOptions remote;
  remote.connect_timeout = absl::Seconds(10);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(Connect(ClosedPort(), remote),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("refused the connection")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ConnectErrorSocketTest, AWorkersPortIsNotACoordinator) {
  Server worker(grpc::InsecureServerCredentials());
  EXPECT_THAT(Connect(worker.address(), {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(worker.address()), HasSubstr("not a Tandem coordinator"))));
}

TEST(ConnectErrorSocketTest, TlsOnOneSideOnlySaysWhichFlagToChange) {
  ASSERT_OK_AND_ASSIGN(TlsPem pem, DevCerts());
  ASSERT_OK_AND_ASSIGN(auto tls_credentials, ServerCredentialsFor({pem.cert, pem.key, ""}));
  Server tls_server(tls_credentials);
  RemoteChatOptions plaintext;
  plaintext.connect_timeout = absl::Seconds(5);
  EXPECT_THAT(Connect(tls_server.address(), plaintext),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("give its CA certificate")));

  Server plain_server(grpc::InsecureServerCredentials());
  RemoteChatOptions tls;
  tls.connect_timeout = absl::Seconds(5);
  tls.credentials = ChannelCredentialsFor({"", "", pem.ca});
  EXPECT_THAT(Connect(plain_server.address(), tls),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("drop --tls-ca")));
}

}  // namespace
}  // namespace tandem
