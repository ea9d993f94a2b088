// tandem-worker --role draft|target --model PATH [--listen HOST:PORT]
//               [--metrics-listen HOST:PORT] [--threads N] [--kv f16|f32|i8] [--ctx N]
//               [--max-sessions N] [--kv-budget-mb N] [--max-batch-tokens N] [--drain-seconds S]
//               [--session-idle-seconds S] [--open-timeout-seconds S] [-v N]
//               [--tls-cert PEM --tls-key PEM [--tls-ca PEM [--tls-client-name NAME]]]
//               [--health-listen HOST:PORT] [--activations int16|int8]
//
// Serves tandem.v1.Worker for one model. At --max-sessions (or the KV budget) a new session
// evicts the least recently used idle one; the coordinator re-fills it from its history. Health is
// NOT_SERVING while the model loads and SERVING after; SIGTERM drains (stops accepting, finishes
// in-flight requests) and exits. A model path that does not open as a model fails before any port
// is bound; then prints "tandem-worker listening on HOST:PORT[ (metrics on M)][ (health on H)]"
// once the ports are bound. --tls-cert/--tls-key serve TLS; with --tls-ca the worker requires
// mutual TLS: a client (the coordinator) without a certificate signed by that CA is refused in the
// handshake, health checks included, and with --tls-client-name only the certificate naming
// the coordinator is taken (UNAUTHENTICATED otherwise); --health-listen then serves grpc.health.v1
// alone in plaintext for probes that cannot present one.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "core/decoder/load_report.h"
#include "core/kernels/matmul.h"
#include "wire/grpc_server.h"
#include "wire/logging.h"
#include "wire/metrics.h"
#include "wire/startup_signals.h"
#include "wire/tls_credentials.h"
#include "workers/worker_engine.h"
#include "workers/worker_options.h"
#include "workers/worker_service.h"

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-worker: %s\n", message.c_str());
  return code;
}

// The engine's options with the metrics hooks set.
tandem::WorkerOptions Observed(tandem::WorkerOptions options, tandem::WorkerMetrics& metrics) {
  metrics.kv_cache_capacity_bytes.Set(static_cast<double>(options.kv_budget_bytes));
  options.on_preemption = [&metrics] { metrics.preemptions.Increment(); };
  options.mask_observer = [&metrics](double seconds) {
    metrics.constraint_mask_seconds.Observe(seconds);
  };
  options.step_observer = [&metrics](const tandem::StepStats& step) {
    metrics.step_seconds.Observe(step.seconds);
    metrics.step_sessions.Observe(static_cast<double>(step.sessions));
    metrics.prefix_cached_tokens.Increment(static_cast<double>(step.adopted_rows));
    const std::pair<const char*, int64_t> kinds[] = {
        {"decode", step.decode_rows}, {"verify", step.verify_rows}, {"prefill", step.prefill_rows}};
    for (const auto& [kind, rows] : kinds) {
      if (rows == 0) continue;
      metrics.StepRows(kind).Observe(static_cast<double>(rows));
      metrics.ComputedRows(kind).Increment(static_cast<double>(rows));
    }
  };
  return options;
}

// Reads the TLS files, binds the ports (health NOT_SERVING) and prints the listening line.
absl::StatusOr<std::unique_ptr<tandem::GrpcServer>> Listen(
    const tandem::WorkerProcessOptions& options, tandem::WorkerService& service,
    std::shared_ptr<prometheus::Registry> registry) {
  absl::StatusOr<tandem::TlsPem> tls = tandem::ReadTlsFiles(options.tls);
  if (!tls.ok()) return tls.status();
  tandem::GrpcServerOptions server_options = options.server;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      tandem::ServerCredentialsFor(*tls, options.tls_client_name);
  if (!credentials.ok()) return credentials.status();
  server_options.credentials = *std::move(credentials);
  absl::StatusOr<std::unique_ptr<tandem::GrpcServer>> server =
      tandem::GrpcServer::Start(server_options, {&service}, std::move(registry));
  if (!server.ok()) return server.status();
  std::string ports;  // only the ports that exist
  if ((*server)->metrics_port() != 0) {
    ports += " (metrics on " + std::to_string((*server)->metrics_port()) + ")";
  }
  if ((*server)->health_port() != 0) {
    ports += " (health on " + std::to_string((*server)->health_port()) + ")";
  }
  std::printf("tandem-worker listening on %s%s\n", (*server)->address().c_str(), ports.c_str());
  std::fflush(stdout);
  return server;
}

// Serves until SIGTERM, then drains. Exit status 2 when it cannot start.
int Run(const tandem::WorkerProcessOptions& options) {
  const std::string role(tandem::WorkerRoleName(options.engine.role));
  auto registry = std::make_shared<prometheus::Registry>();
  tandem::WorkerMetrics metrics(*registry, role);
  const tandem::WorkerOptions engine_options = Observed(options.engine, metrics);
  tandem::WorkerService service(&metrics, options.session_idle, options.open_timeout);
  // A model that cannot even be opened fails before the port is bound: "listening" means the
  // worker is about to load a model that opens.
  if (absl::Status opens = tandem::CheckModelOpens(engine_options.model_path); !opens.ok()) {
    return Fail(2, opens.ToString());
  }
  absl::StatusOr<std::unique_ptr<tandem::GrpcServer>> server = Listen(options, service, registry);
  if (!server.ok()) return Fail(2, server.status().ToString());

  // Health says NOT_SERVING until the model is loaded; a stop request meanwhile exits at once.
  tandem::ExitDuringStartup startup("tandem-worker");
  tandem::LoadReport load(engine_options.model_path, stderr, isatty(STDERR_FILENO) == 1);
  load.Prefetch();
  absl::StatusOr<std::unique_ptr<tandem::WorkerEngine>> engine =
      tandem::WorkerEngine::Create(engine_options);
  if (!engine.ok()) {
    (*server)->Drain(absl::ZeroDuration());
    return Fail(2, engine.status().ToString());
  }
  load.Loaded((*engine)->model());
  service.SetEngine(engine->get());
  startup.Done();  // before SERVING: a SIGTERM from now on drains instead of exiting at once
  (*server)->SetServing(true);
  const tandem::Model& model = (*engine)->model();
  const std::string activations(tandem::ActivationPrecisionName(model.activations()));
  std::fprintf(stderr, "tandem-worker: %s ready: %s (%s, %lld parameters, activations %s)\n",
               role.c_str(), engine_options.model_path.c_str(), model.weight_type().c_str(),
               static_cast<long long>(model.parameter_count()), activations.c_str());

  tandem::WaitForTerminationSignal();
  std::fprintf(stderr, "tandem-worker: draining\n");
  (*server)->Drain(options.drain);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::BlockTerminationSignals();
  absl::StatusOr<tandem::WorkerProcessOptions> options = tandem::WorkerOptionsFromFlags(argc, argv);
  if (!options.ok()) return Fail(2, std::string(options.status().message()));
  tandem::InitLogging(argv[0], options->verbosity);
  return Run(*options);
}
