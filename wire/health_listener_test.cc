#include "wire/health_listener.h"

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/sync_stream.h"
#include "gtest/gtest.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "wire/grpc_server.h"
#include "wire/held_port.h"

namespace tandem {
namespace {

using ::tandem::testing::HeldPort;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// A Worker whose Describe answers: reachable means OK, not UNIMPLEMENTED.
class DescribingWorker : public v1::Worker::Service {
  grpc::Status Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                        v1::DescribeResponse*) override {
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return context;
}

// "SERVING", "NOT_SERVING", ... or the gRPC code's number when the check failed.
std::string Health(const std::string& address, const std::string& service = "") {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(Context().get(), request, &response);
  if (!status.ok()) return absl::StrCat("code ", status.error_code());
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

grpc::StatusCode Describe(const std::string& address) {
  auto stub = v1::Worker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::DescribeResponse response;
  return stub->Describe(Context().get(), v1::DescribeRequest(), &response).error_code();
}

// The code a reflection stream's first answer ends with: list_services on `method`
// ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo" or v1alpha's, whose messages
// are v1's field for field).
grpc::StatusCode ListServices(const std::string& address, const std::string& method) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto context = Context();
  std::unique_ptr<grpc::ClientReaderWriter<grpc::reflection::v1::ServerReflectionRequest,
                                           grpc::reflection::v1::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             grpc::reflection::v1::ServerReflectionRequest,
             grpc::reflection::v1::ServerReflectionResponse>::
                 Create(channel.get(),
                        grpc::internal::RpcMethod(method.c_str(),
                                                  grpc::internal::RpcMethod::BIDI_STREAMING),
                        context.get()));
  grpc::reflection::v1::ServerReflectionRequest request;
  request.set_list_services("*");
  stream->Write(request);
  stream->WritesDone();
  grpc::reflection::v1::ServerReflectionResponse response;
  while (stream->Read(&response)) {
  }
  return stream->Finish().error_code();
}

TEST(HealthListenerTest, MirrorsTheServersHealthButServesNothingElse) {
  DescribingWorker worker;
  GrpcServerOptions options;
  options.health_listen = "127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start(options, {&worker}, nullptr));
  ASSERT_GT(server->health_port(), 0);
  ASSERT_NE(server->health_port(), server->port());
  const std::string health = absl::StrCat("127.0.0.1:", server->health_port());
  EXPECT_EQ(Health(health), "NOT_SERVING");
  EXPECT_EQ(Health(health, GrpcServer::kLivenessService), "SERVING");
  server->SetServing(true);
  EXPECT_EQ(Health(health), "SERVING");
  EXPECT_EQ(Describe(server->address()), grpc::StatusCode::OK);
  EXPECT_EQ(Describe(health), grpc::StatusCode::UNIMPLEMENTED);
  for (const char* method : {"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                             "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"}) {
    SCOPED_TRACE(method);
    EXPECT_EQ(ListServices(server->address(), method), grpc::StatusCode::OK);
    EXPECT_EQ(ListServices(health, method), grpc::StatusCode::UNIMPLEMENTED);
  }
  server->Drain(absl::Seconds(1));
  EXPECT_EQ(Health(health), absl::StrCat("code ", grpc::StatusCode::UNAVAILABLE));
}

TEST(HealthListenerTest, WithoutTheOptionThereIsNoHealthPort) {
  DescribingWorker worker;
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start({"127.0.0.1:0", ""}, {&worker}, nullptr));
  EXPECT_EQ(server->health_port(), 0);
}

TEST(HealthListenerTest, ABusyOrMalformedAddressIsAStatusNamingIt) {
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  const std::string taken = absl::StrCat("127.0.0.1:", held.port());
  EXPECT_THAT(HealthListener::Start(taken),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(taken)));
  EXPECT_THAT(HealthListener::Start("nowhere"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nowhere'")));
}

}  // namespace
}  // namespace tandem
