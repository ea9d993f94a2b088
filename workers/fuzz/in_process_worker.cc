#include "workers/fuzz/in_process_worker.h"

#include <cstdio>
#include <cstdlib>

#include "core/base/shared_data_test_util.h"
#include "grpcpp/server_builder.h"

namespace tandem::fuzzing {

InProcessWorker::InProcessWorker(WorkerRole role, const std::string& shared_model, int context_size,
                                 int max_sessions) {
  absl::StatusOr<std::string> path = testing::SharedFile(shared_model);
  WorkerOptions options;
  options.role = role;
  options.model_path = path.ok() ? *path : shared_model;
  options.threads = 1;
  options.context_size = context_size;
  options.max_sessions = max_sessions;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> created = WorkerEngine::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", shared_model.c_str(),
                 created.status().ToString().c_str());
    std::exit(2);
  }
  engine = *std::move(created);
  metrics = std::make_unique<WorkerMetrics>(registry, std::string(WorkerRoleName(role)));
  service = std::make_unique<WorkerService>(metrics.get());
  service->SetEngine(engine.get());
  grpc::ServerBuilder builder;
  builder.RegisterService(service.get());
  server = builder.BuildAndStart();
}

std::shared_ptr<grpc::Channel> InProcessWorker::Channel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return server->InProcessChannel(args);
}

}  // namespace tandem::fuzzing
