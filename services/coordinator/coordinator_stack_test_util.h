// Test-only: real workers (engine, metrics, service) served by gRPC inside the test process,
// for the coordinator's tests, and the clients the coordinator reaches them with.
#ifndef TANDEM_SERVICES_COORDINATOR_COORDINATOR_STACK_TEST_UTIL_H_
#define TANDEM_SERVICES_COORDINATOR_COORDINATOR_STACK_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "prometheus/registry.h"
#include "services/coordinator/worker_client.h"
#include "workers/worker_engine.h"
#include "workers/worker_service.h"

namespace tandem::testing {

// A worker with the shared model file `model` (1 thread, 256-token context), served on loopback
// TCP (the OS picks `port`). A failure is an ADD_FAILURE and leaves `server` null, so callers
// ASSERT_NE(server, nullptr).
class TestWorker {
 public:
  // `max_sessions` 0 keeps the worker's default; `kv_budget_bytes` 0: no KV budget.
  TestWorker(WorkerRole role, const std::string& model, int max_sessions = 0,
             absl::Duration idle_timeout = absl::Minutes(10), int64_t kv_budget_bytes = 0);
  // Serves `service` itself (the default), or `front`, which wraps it and is kept until the
  // server is gone.
  void Serve(std::unique_ptr<grpc::Service> front = nullptr);

  // Over loopback TCP: a real client channel, which re-attaching after a failure needs.
  std::unique_ptr<WorkerClient> TcpClient() const;
  // Over the server's in-process channel.
  std::unique_ptr<WorkerClient> Client(const std::string& name) const;
  // Waits (bounded, 3 s) until the engine holds `n` sessions; returns how many it holds.
  int AwaitSessions(int n) const;

  prometheus::Registry registry;
  std::unique_ptr<WorkerEngine> engine;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<WorkerService> service;
  std::unique_ptr<grpc::Service> front;  // outlives `server`
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// A fake draft worker that claims `model`'s model (so a coordinator whose target serves
// `model` accepts it; role draft, 16 sessions); subclasses answer Attach.
class FakeDraftWorker : public v1::Worker::Service {
 public:
  explicit FakeDraftWorker(const WorkerEngine& model) : model_(model) {}
  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override;

 private:
  const WorkerEngine& model_;
};

// Answers a fake worker's session stream until it ends: an open is opened, a sync reports
// every token cached, a close is closed, and a draft or verify gets what `answer` fills in.
using FakeAnswer = std::function<void(const v1::SessionRequest&, v1::SessionResponse*)>;
grpc::Status AnswerSession(
    grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream,
    const FakeAnswer& answer, const std::function<void()>& on_sync = nullptr);

// A server for `service` with no listening port: reached through InProcessClient only.
std::unique_ptr<grpc::Server> ServeInProcess(grpc::Service* service);
// A client named `name` over `server`'s in-process channel (64 MiB answers).
std::unique_ptr<WorkerClient> InProcessClient(const std::string& name, grpc::Server& server);

}  // namespace tandem::testing

#endif  // TANDEM_SERVICES_COORDINATOR_COORDINATOR_STACK_TEST_UTIL_H_
