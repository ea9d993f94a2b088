#include "services/common/grpc_server.h"

#include <chrono>
#include <memory>
#include <thread>

#include "core/base/status_matchers.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

HealthCheckResponse::ServingStatus Health(const std::string& address,
                                          const std::string& service = "") {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.status();
}

TEST(GrpcServerTest, ServesHealthThatFollowsReadinessAndDrains) {
  v1::Worker::Service unimplemented_worker;
  auto registry = std::make_shared<prometheus::Registry>();
  ASSERT_OK_AND_ASSIGN(auto server,
                       GrpcServer::Start({"127.0.0.1:0", ""}, {&unimplemented_worker}, registry));
  ASSERT_GT(server->port(), 0);
  EXPECT_EQ(server->metrics_port(), 0);
  EXPECT_EQ(Health(server->address()), HealthCheckResponse::NOT_SERVING);
  server->SetServing(true);
  EXPECT_EQ(Health(server->address()), HealthCheckResponse::SERVING);

  // A registered service with no handlers answers UNIMPLEMENTED: the server routes calls.
  auto stub = v1::Worker::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::DescribeResponse response;
  EXPECT_EQ(stub->Describe(&context, v1::DescribeRequest(), &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  server->Drain(absl::Seconds(1));
  server->Drain(absl::Seconds(1));  // idempotent
}

TEST(GrpcServerTest, LivenessIsServingWhileReadinessIsNot) {
  v1::Worker::Service service;
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start({"127.0.0.1:0", ""}, {&service}, nullptr));
  EXPECT_EQ(Health(server->address()), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Health(server->address(), GrpcServer::kLivenessService), HealthCheckResponse::SERVING);
  server->SetServing(true);
  server->SetServing(false);
  EXPECT_EQ(Health(server->address(), GrpcServer::kLivenessService), HealthCheckResponse::SERVING);
}

TEST(GrpcServerTest, DrainReportsNotServingBeforeTheListenerClosesAndCannotBeUndone) {
  v1::Worker::Service service;
  GrpcServerOptions options;
  options.drain_notice = absl::Milliseconds(600);
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start(options, {&service}, nullptr));
  server->SetServing(true);
  std::thread drain([&] { server->Drain(absl::Seconds(1)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  server->SetServing(true);  // e.g. a health watcher that has not heard of the drain
  EXPECT_EQ(Health(server->address()), HealthCheckResponse::NOT_SERVING);
  drain.join();
}

TEST(GrpcServerTest, RejectsAnAddressWithoutPort) {
  v1::Worker::Service service;
  EXPECT_THAT(
      GrpcServer::Start({"localhost", ""}, {&service}, nullptr),
      testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("localhost")));
}

}  // namespace
}  // namespace tandem
