#include "services/coordinator/coordinator_stack_test_util.h"

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/shared_data_test_util.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace tandem::testing {

TestWorker::TestWorker(WorkerRole role, const std::string& model, int max_sessions,
                       absl::Duration idle_timeout, int64_t kv_budget_bytes) {
  absl::StatusOr<std::string> path = SharedFile(model);
  EXPECT_TRUE(path.ok()) << path.status();
  WorkerOptions options;
  options.role = role;
  options.model_path = path.ok() ? *path : "";
  options.threads = 1;
  options.context_size = 256;
  if (max_sessions > 0) options.max_sessions = max_sessions;
  options.kv_budget_bytes = kv_budget_bytes;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> created = WorkerEngine::Create(options);
  if (!created.ok()) {  // a constructor cannot ASSERT: callers check `server`
    ADD_FAILURE() << created.status();
    return;
  }
  engine = std::move(*created);
  metrics = std::make_unique<WorkerMetrics>(registry, std::string(WorkerRoleName(role)));
  service = std::make_unique<WorkerService>(metrics.get(), idle_timeout);
  service->SetEngine(engine.get());
}

void TestWorker::Serve(std::unique_ptr<grpc::Service> wrapper) {
  if (service == nullptr) return;  // the engine failed: the constructor said so
  front = std::move(wrapper);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.RegisterService(front != nullptr ? front.get() : service.get());
  server = builder.BuildAndStart();
  EXPECT_NE(server, nullptr) << "no server on 127.0.0.1:0";
}

std::unique_ptr<WorkerClient> TestWorker::TcpClient() const {
  return std::make_unique<WorkerClient>(absl::StrCat("127.0.0.1:", port));
}

std::unique_ptr<WorkerClient> TestWorker::Client(const std::string& name) const {
  return InProcessClient(name, *server);
}

int TestWorker::AwaitSessions(int n) const {
  for (int i = 0; i < 300 && engine->active_sessions() != n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return engine->active_sessions();
}

grpc::Status FakeDraftWorker::Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                                       v1::DescribeResponse* response) {
  FillModelInfo(model_, response->mutable_model());
  response->set_role(v1::WORKER_ROLE_DRAFT);
  response->set_max_sessions(16);
  return grpc::Status::OK;
}

grpc::Status AnswerSession(
    grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream,
    const FakeAnswer& answer, const std::function<void()>& on_sync) {
  v1::SessionRequest request;
  while (stream->Read(&request)) {
    v1::SessionResponse response;
    response.set_request_id(request.request_id());
    switch (request.request_case()) {
      case v1::SessionRequest::kOpen:
        response.mutable_opened();
        break;
      case v1::SessionRequest::kSync:
        if (on_sync) on_sync();
        response.mutable_sync()->set_cached_tokens(request.sync().position() +
                                                   request.sync().tokens_size());
        break;
      case v1::SessionRequest::kDraft:
      case v1::SessionRequest::kVerify:
        answer(request, &response);
        break;
      default:
        response.mutable_closed();
    }
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

std::unique_ptr<grpc::Server> ServeInProcess(grpc::Service* service) {
  grpc::ServerBuilder builder;
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

std::unique_ptr<WorkerClient> InProcessClient(const std::string& name, grpc::Server& server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return std::make_unique<WorkerClient>(name, server.InProcessChannel(args));
}

}  // namespace tandem::testing
