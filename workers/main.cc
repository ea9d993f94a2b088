// tandem-worker --role draft|target --model PATH [--listen HOST:PORT]
//               [--metrics-listen HOST:PORT] [--threads N] [--kv f16|f32|i8] [--ctx N]
//               [--max-sessions N] [--kv-budget-mb N] [--max-batch-tokens N] [--drain-seconds S]
//               [--session-idle-seconds S] [--open-timeout-seconds S] [-v N]
//               [--tls-cert PEM --tls-key PEM [--tls-ca PEM [--tls-client-name NAME]]]
//               [--health-listen HOST:PORT]
//
// Serves tandem.v1.Worker for one model. At --max-sessions (or the KV budget) a new session
// evicts the least recently used idle one; the coordinator re-fills it from its history. Health is
// NOT_SERVING while the model loads and SERVING after; SIGTERM drains (stops accepting, finishes
// in-flight requests) and exits. Prints "tandem-worker listening on HOST:PORT (metrics on M)" once
// the port is bound. --tls-cert/--tls-key serve TLS; with --tls-ca the worker requires mutual
// TLS: a client (the coordinator) without a certificate signed by that CA is refused in the
// handshake, health checks included, and with --tls-client-name only the certificate naming
// the coordinator is taken (UNAUTHENTICATED otherwise); --health-listen then serves grpc.health.v1
// alone in plaintext for probes that cannot present one.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "core/base/command_line.h"
#include "core/decoder/load_report.h"
#include "wire/grpc_server.h"
#include "wire/logging.h"
#include "wire/metrics.h"
#include "wire/startup_signals.h"
#include "wire/tls_credentials.h"
#include "workers/worker_engine.h"
#include "workers/worker_service.h"

ABSL_FLAG(std::string, role, "", "draft or target");
ABSL_FLAG(std::string, model, "", "GGUF file or Hugging Face folder");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address (port 0 picks a free one)");
ABSL_FLAG(std::string, metrics_listen, "", "Prometheus /metrics address; empty: none");
ABSL_FLAG(int, threads, 2, "threads for the forward passes");
ABSL_FLAG(std::string, kv, "f16",
          "KV cache type: f32, f16 or i8 (i8: under half of f16's bytes; greedy output close "
          "to f32's, not equal: README 'KV cache types')");
ABSL_FLAG(int, ctx, 0, "context size per session; 0: the model's");
ABSL_FLAG(int, max_sessions, 64,
          "sessions attached at once; at the limit a new one evicts the least recently used "
          "idle session (the coordinator admits no more concurrent requests than this)");
ABSL_FLAG(int, kv_budget_mb, 0, "KV cache memory for all sessions, MiB; 0: no limit");
ABSL_FLAG(int, max_batch_tokens, 128,
          "rows one scheduler step runs for all sessions together (1..512): decode and verify "
          "rows first, prefill chunked into the rest");
ABSL_FLAG(double, drain_seconds, 10, "how long SIGTERM waits for in-flight requests");
ABSL_FLAG(int, v, 0, "log verbosity: 1 logs each session, 2 each call (log lines go to stderr)");
ABSL_FLAG(double, session_idle_seconds, 600,
          "a session stream idle this long is closed and its cache freed; 0: never");
ABSL_FLAG(double, open_timeout_seconds, 10,
          "an Attach stream that sends no `open` this long is closed; 0: never");

ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve TLS; empty: plaintext");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificate(s): require clients to present a certificate signed by it "
          "(mutual TLS; needs --tls-cert)");
ABSL_FLAG(std::string, tls_client_name, "",
          "with --tls-ca: take calls only from the client certificate with this common name "
          "or subjectAltName (the coordinator's); empty: any certificate of the CA");
ABSL_FLAG(std::string, health_listen, "",
          "plaintext address serving only grpc.health.v1, for probes without TLS; empty: none");

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-worker: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::BlockTerminationSignals();
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-worker", "0.1.0",
       "Serves one model (draft or target) to a Tandem coordinator over gRPC.\n"
       "usage: tandem-worker --role draft|target --model PATH [--listen HOST:PORT]\n"
       "       [--metrics-listen HOST:PORT] [--threads N] [--kv f16|f32|i8] [--ctx N]\n"
       "       [--max-sessions N] [--kv-budget-mb N] [--max-batch-tokens N]\n"
       "       [--session-idle-seconds S] [--open-timeout-seconds S] [-v N]\n"
       "       [--tls-cert PEM --tls-key PEM [--tls-ca PEM [--tls-client-name NAME]]]\n"
       "       [--health-listen HOST:PORT]",
       "workers/main.cc"});
  if (!args.ok()) return Fail(2, std::string(args.status().message()));
  if (!args->empty()) return Fail(2, "unexpected argument '" + (*args)[0] + "'");
  tandem::InitLogging(argv[0], absl::GetFlag(FLAGS_v));

  tandem::WorkerOptions options;
  const std::string role = absl::GetFlag(FLAGS_role);
  if (role == "draft") {
    options.role = tandem::WorkerRole::kDraft;
  } else if (role == "target") {
    options.role = tandem::WorkerRole::kTarget;
  } else {
    return Fail(2, "--role must be draft or target, got '" + role + "'");
  }
  options.model_path = absl::GetFlag(FLAGS_model);
  if (options.model_path.empty()) return Fail(2, "--model is required");
  options.threads = absl::GetFlag(FLAGS_threads);
  options.context_size = absl::GetFlag(FLAGS_ctx);
  options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.kv_budget_bytes = int64_t{absl::GetFlag(FLAGS_kv_budget_mb)} << 20;
  options.scheduler.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  if (options.scheduler.max_batch_tokens < 1 ||
      options.scheduler.max_batch_tokens > tandem::Decoder::kMaxChunk) {
    return Fail(2, "--max-batch-tokens must be in [1, 512]");
  }
  absl::StatusOr<tandem::KvType> kv = tandem::ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) return Fail(2, "--kv: " + std::string(kv.status().message()));
  options.kv_type = *kv;
  if (options.threads < 1 || options.max_sessions < 1 || options.context_size < 0 ||
      options.kv_budget_bytes < 0) {
    return Fail(2, "--threads and --max-sessions must be >= 1, --ctx and --kv-budget-mb >= 0");
  }

  auto registry = std::make_shared<prometheus::Registry>();
  tandem::WorkerMetrics metrics(*registry, role);
  metrics.kv_cache_capacity_bytes.Set(static_cast<double>(options.kv_budget_bytes));
  options.on_preemption = [&metrics] { metrics.preemptions.Increment(); };
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
  const double idle = absl::GetFlag(FLAGS_session_idle_seconds);
  const double open = absl::GetFlag(FLAGS_open_timeout_seconds);
  if (idle < 0 || open < 0) {
    return Fail(2, "--session-idle-seconds and --open-timeout-seconds must be >= 0");
  }
  absl::StatusOr<tandem::TlsPem> tls = tandem::ReadTlsFiles(
      {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_ca)});
  if (!tls.ok()) return Fail(2, tls.status().ToString());
  tandem::GrpcServerOptions server_options;
  server_options.listen = absl::GetFlag(FLAGS_listen);
  server_options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  server_options.health_listen = absl::GetFlag(FLAGS_health_listen);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      tandem::ServerCredentialsFor(*tls, absl::GetFlag(FLAGS_tls_client_name));
  if (!credentials.ok()) return Fail(2, credentials.status().ToString());
  server_options.credentials = *std::move(credentials);
  tandem::WorkerService service(&metrics, absl::Seconds(idle), absl::Seconds(open));
  absl::StatusOr<std::unique_ptr<tandem::GrpcServer>> server =
      tandem::GrpcServer::Start(server_options, {&service}, registry);
  if (!server.ok()) return Fail(2, server.status().ToString());
  const std::string health_line =
      (*server)->health_port() == 0
          ? ""
          : " (health on " + std::to_string((*server)->health_port()) + ")";
  std::printf("tandem-worker listening on %s (metrics on %d)%s\n", (*server)->address().c_str(),
              (*server)->metrics_port(), health_line.c_str());
  std::fflush(stdout);

  // Health says NOT_SERVING until the model is loaded; a stop request meanwhile exits at once.
  tandem::ExitDuringStartup startup("tandem-worker");
  tandem::LoadReport load(options.model_path, stderr, isatty(STDERR_FILENO) == 1);
  load.Prefetch();
  absl::StatusOr<std::unique_ptr<tandem::WorkerEngine>> engine =
      tandem::WorkerEngine::Create(options);
  if (!engine.ok()) {
    (*server)->Drain(absl::ZeroDuration());
    return Fail(2, engine.status().ToString());
  }
  load.Loaded((*engine)->model());
  service.SetEngine(engine->get());
  startup.Done();  // before SERVING: a SIGTERM from now on drains instead of exiting at once
  (*server)->SetServing(true);
  std::fprintf(stderr, "tandem-worker: %s ready: %s (%s, %lld parameters)\n", role.c_str(),
               options.model_path.c_str(), (*engine)->model().weight_type().c_str(),
               static_cast<long long>((*engine)->model().parameter_count()));

  tandem::WaitForTerminationSignal();
  std::fprintf(stderr, "tandem-worker: draining\n");
  (*server)->Drain(absl::Seconds(absl::GetFlag(FLAGS_drain_seconds)));
  return 0;
}
