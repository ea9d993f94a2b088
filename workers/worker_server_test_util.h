// Test-only: a worker (engine, metrics, service) served by gRPC inside the test process and
// reached through the server's in-process channel, and one request/answer on an Attach stream.
#ifndef TANDEM_WORKERS_WORKER_SERVER_TEST_UTIL_H_
#define TANDEM_WORKERS_WORKER_SERVER_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/shared_data_test_util.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "workers/worker_engine.h"
#include "workers/worker_service.h"

namespace tandem::testing {

struct TestServerOptions {
  std::string model_path;  // empty: the shared stories260K model
  int context_size = 64;
  int max_sessions = WorkerOptions().max_sessions;
  absl::Duration idle_timeout = absl::Minutes(10);
  absl::Duration open_timeout = absl::Seconds(10);
  bool set_engine = true;  // false: the service answers UNAVAILABLE until SetEngine
  Pooling pooling = Pooling::kMean;  // --pooling (#30 embeddings)
};

// Members in the order they must be built (and destroyed in reverse).
struct TestWorkerServer {
  prometheus::Registry registry;
  std::unique_ptr<WorkerEngine> engine;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<WorkerService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::Worker::Stub> stub;
};

// A target worker (1 thread) as `options` says, its server started and `stub` connected.
inline absl::Status StartTestWorkerServer(const TestServerOptions& options,
                                          TestWorkerServer* worker) {
  WorkerOptions engine_options;
  engine_options.model_path = options.model_path;
  if (engine_options.model_path.empty()) {
    absl::StatusOr<std::string> path = SharedFile("models/stories260K/stories260K.gguf");
    if (!path.ok()) return path.status();
    engine_options.model_path = *path;
  }
  engine_options.threads = 1;
  engine_options.context_size = options.context_size;
  engine_options.max_sessions = options.max_sessions;
  engine_options.pooling = options.pooling;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(engine_options);
  if (!engine.ok()) return engine.status();
  worker->engine = std::move(*engine);
  worker->metrics = std::make_unique<WorkerMetrics>(worker->registry, "target");
  worker->service = std::make_unique<WorkerService>(worker->metrics.get(), options.idle_timeout,
                                                    options.open_timeout);
  if (options.set_engine) worker->service->SetEngine(worker->engine.get());
  grpc::ServerBuilder builder;
  builder.RegisterService(worker->service.get());
  worker->server = builder.BuildAndStart();
  if (worker->server == nullptr) return absl::InternalError("the in-process server did not start");
  worker->stub = v1::Worker::NewStub(worker->server->InProcessChannel(grpc::ChannelArguments()));
  return absl::OkStatus();
}

using SessionStream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

// Writes `request` and reads its answer; a broken stream or another request's answer is a test
// failure.
inline v1::SessionResponse Exchange(SessionStream& stream, const v1::SessionRequest& request) {
  EXPECT_TRUE(stream.Write(request));
  v1::SessionResponse response;
  EXPECT_TRUE(stream.Read(&response));
  EXPECT_EQ(response.request_id(), request.request_id());
  return response;
}

}  // namespace tandem::testing

#endif  // TANDEM_WORKERS_WORKER_SERVER_TEST_UTIL_H_
