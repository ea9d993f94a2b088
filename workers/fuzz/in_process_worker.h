// A worker for fuzz harnesses: engine, service and an in-process gRPC server over one model
// from the shared folder, with a small context so that every request is cheap.
#ifndef TANDEM_WORKERS_FUZZ_IN_PROCESS_WORKER_H_
#define TANDEM_WORKERS_FUZZ_IN_PROCESS_WORKER_H_

#include <memory>
#include <string>

#include "grpcpp/server.h"
#include "prometheus/registry.h"
#include "wire/metrics.h"
#include "workers/worker_engine.h"
#include "workers/worker_service.h"

namespace tandem::fuzzing {

struct InProcessWorker {
  // Exits the process (status 2, with a message) when the model cannot be loaded.
  InProcessWorker(WorkerRole role, const std::string& shared_model, int context_size,
                  int max_sessions);
  std::shared_ptr<grpc::Channel> Channel();

  prometheus::Registry registry;
  std::unique_ptr<WorkerEngine> engine;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<WorkerService> service;
  std::unique_ptr<grpc::Server> server;
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_WORKERS_FUZZ_IN_PROCESS_WORKER_H_
