#include "wire/tls_credentials.h"

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "wire/grpc_server.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// Dev certificates, made once for the whole test binary (openssl takes a while).
const std::string& Certs() {
  static const std::string* dir = [] {
    absl::StatusOr<std::string> made = testing::MakeDevCerts();
    EXPECT_TRUE(made.ok()) << made.status();
    return new std::string(made.ok() ? *made : "/nonexistent");
  }();
  return *dir;
}

std::string Cert(const std::string& name) { return Certs() + "/" + name; }

TlsPem Read(const TlsFiles& files) {
  absl::StatusOr<TlsPem> pem = ReadTlsFiles(files);
  EXPECT_TRUE(pem.ok()) << pem.status();
  return pem.ok() ? *pem : TlsPem();
}

TEST(ReadTlsFilesTest, RefusesHalfPairsMissingFilesAndWrongContents) {
  struct Case {
    TlsFiles files;
    absl::StatusCode code;
    std::string words;
  };
  const std::string missing = Certs() + "/no-such.pem";
  const Case cases[] = {
      {{Cert("server.crt"), "", ""},
       absl::StatusCode::kInvalidArgument,
       "--tls-cert needs --tls-key"},
      {{"", Cert("server.key"), ""},
       absl::StatusCode::kInvalidArgument,
       "--tls-key needs --tls-cert"},
      {{missing, Cert("server.key"), ""}, absl::StatusCode::kNotFound, missing},
      {{Cert("server.key"), Cert("server.key"), ""},
       absl::StatusCode::kInvalidArgument,
       "holds no PEM CERTIFICATE"},
      {{Cert("server.crt"), Cert("server.crt"), ""},
       absl::StatusCode::kInvalidArgument,
       "--tls-key '" + Cert("server.crt") + "' holds no PEM PRIVATE KEY"},
      {{"", "", Cert("ca.key")}, absl::StatusCode::kInvalidArgument, "--tls-ca"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ReadTlsFiles(c.files), StatusIs(c.code, HasSubstr(c.words))) << c.words;
  }
}

TEST(ReadTlsFilesTest, ReadsAPairAndACa) {
  const TlsPem pem = Read({Cert("server.crt"), Cert("server.key"), Cert("ca.crt")});
  EXPECT_THAT(pem.cert, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(pem.key, HasSubstr("PRIVATE KEY"));
  EXPECT_THAT(pem.ca, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_NE(pem.cert, pem.ca);
}

TEST(ServerCredentialsForTest, ACaWithoutACertificateIsRefused) {
  EXPECT_THAT(ServerCredentialsFor(Read({"", "", Cert("ca.crt")})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls-ca needs --tls-cert")));
}

// A Worker server without handlers: a call that gets through the handshake is UNIMPLEMENTED.
class TlsServerTest : public ::testing::Test {
 protected:
  void Serve(const TlsFiles& files) {
    GrpcServerOptions options;
    ASSERT_OK_AND_ASSIGN(options.credentials, ServerCredentialsFor(Read(files)));
    ASSERT_OK_AND_ASSIGN(
        server_, GrpcServer::Start(options, {&service_}, std::make_shared<prometheus::Registry>()));
  }

  grpc::StatusCode Describe(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    auto stub =
        v1::Worker::NewStub(grpc::CreateChannel(server_->address(), std::move(credentials)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::DescribeResponse response;
    return stub->Describe(&context, v1::DescribeRequest(), &response).error_code();
  }

  v1::Worker::Service service_;
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(TlsServerTest, MutualTlsAdmitsOnlyClientsWithACertificateOfTheCa) {
  Serve({Cert("server.crt"), Cert("server.key"), Cert("ca.crt")});
  EXPECT_EQ(Describe(ChannelCredentialsFor(
                Read({Cert("client.crt"), Cert("client.key"), Cert("ca.crt")}))),
            grpc::StatusCode::UNIMPLEMENTED);
  // No client certificate, or none at all (plaintext): refused in the handshake.
  EXPECT_EQ(Describe(ChannelCredentialsFor(Read({"", "", Cert("ca.crt")}))),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Describe(grpc::InsecureChannelCredentials()), grpc::StatusCode::UNAVAILABLE);
  // A certificate of another CA.
  ASSERT_OK_AND_ASSIGN(const std::string other, testing::MakeDevCerts());
  EXPECT_EQ(Describe(ChannelCredentialsFor(
                Read({other + "/client.crt", other + "/client.key", Cert("ca.crt")}))),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsServerTest, AClientNameAdmitsOnlyTheCertificateThatNamesIt) {
  const TlsPem server = Read({Cert("server.crt"), Cert("server.key"), Cert("ca.crt")});
  const auto client =
      ChannelCredentialsFor(Read({Cert("client.crt"), Cert("client.key"), Cert("ca.crt")}));
  // make-dev-certs.sh's client certificate is CN=tandem-coordinator.
  for (const auto& [name, code] : {std::pair{"tandem-coordinator", grpc::StatusCode::UNIMPLEMENTED},
                                   std::pair{"someone-else", grpc::StatusCode::UNAUTHENTICATED}}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<grpc::ServerCredentials> credentials,
                         ServerCredentialsFor(server, name));
    GrpcServerOptions options;
    options.credentials = credentials;
    ASSERT_OK_AND_ASSIGN(
        server_, GrpcServer::Start(options, {&service_}, std::make_shared<prometheus::Registry>()));
    EXPECT_EQ(Describe(client), code) << name;
    server_.reset();
  }
  EXPECT_THAT(ServerCredentialsFor(Read({Cert("server.crt"), Cert("server.key"), ""}), "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs --tls-ca")));
}

TEST_F(TlsServerTest, TlsWithoutACaNeedsNoClientCertificateButAVerifiedServer) {
  Serve({Cert("server.crt"), Cert("server.key"), ""});
  EXPECT_EQ(Describe(ChannelCredentialsFor(Read({"", "", Cert("ca.crt")}))),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(Describe(grpc::InsecureChannelCredentials()), grpc::StatusCode::UNAVAILABLE);
  // A client that trusts another CA does not accept this server.
  ASSERT_OK_AND_ASSIGN(const std::string other, testing::MakeDevCerts());
  EXPECT_EQ(Describe(TlsChannelCredentials(Read({"", "", other + "/ca.crt"}))),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsServerTest, NoFilesIsPlaintext) {
  Serve({});
  EXPECT_EQ(Describe(ChannelCredentialsFor(TlsPem())), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace tandem
