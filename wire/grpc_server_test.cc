#include "wire/grpc_server.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "wire/held_port.h"

namespace tandem {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::tandem::testing::HeldPort;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
namespace rv1 = ::grpc::reflection::v1;

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
  EXPECT_THAT(GrpcServer::Start({"localhost", ""}, {&service}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("localhost")));
}

TEST(GrpcServerTest, RefusesAPortAnotherServerHolds) {
  v1::Worker::Service first_service, second_service;
  ASSERT_OK_AND_ASSIGN(auto first,
                       GrpcServer::Start({"127.0.0.1:0", ""}, {&first_service}, nullptr));
  const std::string taken = first->address();
  EXPECT_THAT(GrpcServer::Start({taken, ""}, {&second_service}, nullptr),
              StatusIs(absl::StatusCode::kUnavailable,
                       ::testing::AllOf(HasSubstr(taken), HasSubstr("already in use"))));
}

TEST(GrpcServerTest, BusyMetricsPortIsAStatusNamingTheAddress) {
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  const std::string metrics = absl::StrCat("127.0.0.1:", held.port());
  v1::Worker::Service service;
  auto registry = std::make_shared<prometheus::Registry>();
  EXPECT_THAT(GrpcServer::Start({"127.0.0.1:0", metrics}, {&service}, registry),
              StatusIs(absl::StatusCode::kUnavailable,
                       ::testing::AllOf(HasSubstr(metrics), HasSubstr("/metrics"))));
}

// One request on a fresh grpc.reflection.v1 stream.
rv1::ServerReflectionResponse ReflectV1(const std::string& address,
                                        const rv1::ServerReflectionRequest& request) {
  auto stub = rv1::ServerReflection::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&context);
  rv1::ServerReflectionResponse response;
  EXPECT_TRUE(stream->Write(request));
  EXPECT_TRUE(stream->Read(&response));
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

TEST(GrpcServerTest, ReflectionV1ListsServicesAndDescribesHealth) {
  v1::Worker::Service worker;
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start({"127.0.0.1:0", ""}, {&worker}, nullptr));
  rv1::ServerReflectionRequest list;
  list.set_list_services("");
  const rv1::ServerReflectionResponse listed = ReflectV1(server->address(), list);
  ASSERT_TRUE(listed.has_list_services_response()) << listed.DebugString();
  std::vector<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, ::testing::IsSupersetOf({"tandem.v1.Worker", "grpc.health.v1.Health",
                                              "grpc.reflection.v1.ServerReflection",
                                              "grpc.reflection.v1alpha.ServerReflection"}));

  rv1::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("grpc.health.v1.Health");
  const rv1::ServerReflectionResponse described = ReflectV1(server->address(), symbol);
  ASSERT_TRUE(described.has_file_descriptor_response()) << described.DebugString();
  ASSERT_EQ(described.file_descriptor_response().file_descriptor_proto_size(), 1);
  google::protobuf::FileDescriptorProto file;
  ASSERT_TRUE(file.ParseFromString(described.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(file.name(), "grpc/health/v1/health.proto");
  ASSERT_EQ(file.service_size(), 1);
  EXPECT_EQ(file.service(0).name(), "Health");
  EXPECT_EQ(file.service(0).method(0).name(), "Check");

  rv1::ServerReflectionRequest missing;
  missing.set_file_containing_symbol("no.such.Service");
  const rv1::ServerReflectionResponse error = ReflectV1(server->address(), missing);
  EXPECT_EQ(error.error_response().error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace tandem
