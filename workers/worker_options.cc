#include "workers/worker_options.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "core/base/command_line.h"
#include "core/decoder/decoder.h"
#include "core/decoder/embedding.h"
#include "core/decoder/kv_cache.h"
#include "core/kernels/matmul.h"

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
// --- #30 embeddings ---
ABSL_FLAG(std::string, pooling, "mean",
          "Embed's pooling when a request names none: mean (over the input's positions) or "
          "last (the last position's hidden state)");
// --- end ---
// --- #31 activations flags ---
ABSL_FLAG(std::string, activations, "int16",
          "quantized matmuls' activation precision: int16 or int8 (int8: faster where compute "
          "binds, logits about as far from exact as llama.cpp's; README 'Activation "
          "precision'; float weights ignore it)");
// --- end ---
ABSL_FLAG(std::string, health_listen, "",
          "plaintext address serving only grpc.health.v1, for probes without TLS; empty: none");

namespace tandem {
namespace {

constexpr char kUsage[] =
    "Serves one model (draft or target) to a Tandem coordinator over gRPC.\n"
    "usage: tandem-worker --role draft|target --model PATH [--listen HOST:PORT]\n"
    "       [--metrics-listen HOST:PORT] [--threads N] [--kv f16|f32|i8] [--ctx N]\n"
    "       [--max-sessions N] [--kv-budget-mb N] [--max-batch-tokens N]\n"
    "       [--session-idle-seconds S] [--open-timeout-seconds S] [-v N]\n"
    "       [--tls-cert PEM --tls-key PEM [--tls-ca PEM [--tls-client-name NAME]]]\n"
    "       [--health-listen HOST:PORT] [--pooling mean|last] [--activations int16|int8]";

// --role, --model and the engine's sizes.
absl::StatusOr<WorkerOptions> EngineFromFlags() {
  WorkerOptions options;
  const std::string role = absl::GetFlag(FLAGS_role);
  if (role == "draft") {
    options.role = WorkerRole::kDraft;
  } else if (role == "target") {
    options.role = WorkerRole::kTarget;
  } else {
    return absl::InvalidArgumentError("--role must be draft or target, got '" + role + "'");
  }
  options.model_path = absl::GetFlag(FLAGS_model);
  if (options.model_path.empty()) return absl::InvalidArgumentError("--model is required");
  options.threads = absl::GetFlag(FLAGS_threads);
  options.context_size = absl::GetFlag(FLAGS_ctx);
  options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.kv_budget_bytes = int64_t{absl::GetFlag(FLAGS_kv_budget_mb)} << 20;
  options.scheduler.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  if (options.scheduler.max_batch_tokens < 1 ||
      options.scheduler.max_batch_tokens > Decoder::kMaxChunk) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-batch-tokens must be in [1, ", Decoder::kMaxChunk, "]"));
  }
  absl::StatusOr<KvType> kv = ParseKvType(absl::GetFlag(FLAGS_kv));
  if (!kv.ok()) return absl::InvalidArgumentError(absl::StrCat("--kv: ", kv.status().message()));
  options.kv_type = *kv;
  // --- #30 embeddings ---
  absl::StatusOr<Pooling> pooling = ParsePooling(absl::GetFlag(FLAGS_pooling));
  if (!pooling.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--pooling: ", pooling.status().message()));
  }
  options.pooling = *pooling;
  // --- end ---
  // --- #31 activations flags ---
  absl::StatusOr<ActivationPrecision> activations =
      ParseActivationPrecision(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--activations: ", activations.status().message()));
  }
  options.model_load.activations = *activations;
  // --- end ---
  if (options.threads < 1 || options.max_sessions < 1 || options.context_size < 0 ||
      options.kv_budget_bytes < 0) {
    return absl::InvalidArgumentError(
        "--threads and --max-sessions must be >= 1, --ctx and --kv-budget-mb >= 0");
  }
  return options;
}

}  // namespace

absl::StatusOr<WorkerProcessOptions> WorkerOptionsFromFlags(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> args =
      ParseCommandLine(argc, argv, {"tandem-worker", "0.1.0", kUsage, "workers/worker_options.cc"});
  if (!args.ok()) return args.status();
  if (!args->empty()) {
    return absl::InvalidArgumentError("unexpected argument '" + (*args)[0] + "'");
  }
  WorkerProcessOptions options;
  options.verbosity = absl::GetFlag(FLAGS_v);
  absl::StatusOr<WorkerOptions> engine = EngineFromFlags();
  if (!engine.ok()) return engine.status();
  options.engine = *std::move(engine);
  const double idle = absl::GetFlag(FLAGS_session_idle_seconds);
  const double open = absl::GetFlag(FLAGS_open_timeout_seconds);
  if (idle < 0 || open < 0) {
    return absl::InvalidArgumentError(
        "--session-idle-seconds and --open-timeout-seconds must be >= 0");
  }
  options.session_idle = absl::Seconds(idle);
  options.open_timeout = absl::Seconds(open);
  options.drain = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  options.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                 absl::GetFlag(FLAGS_tls_ca)};
  options.tls_client_name = absl::GetFlag(FLAGS_tls_client_name);
  options.server.listen = absl::GetFlag(FLAGS_listen);
  options.server.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.server.health_listen = absl::GetFlag(FLAGS_health_listen);
  return options;
}

}  // namespace tandem
