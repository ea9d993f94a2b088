// tandem-coordinator --target ADDR[,ADDR…] [--draft ADDR[,ADDR…]] [--listen HOST:PORT]
//                    [--metrics-listen HOST:PORT] [--draft-tokens N|auto] [--max-sessions N]
//                    [--max-queued-requests N] [--max-queue-wait-seconds S]
//                    [--session-idle-seconds S] [--max-prompt-bytes N] [--max-message-bytes N]
//                    [--target-timeout-seconds S] [--failover-wait-seconds S]
//                    [--draft-deadline-floor-ms MS] [--draft-deadline-multiple X] ...
//
// Serves tandem.v1.Generator over the given workers. It runs at most as many requests at once
// as the target workers hold sessions (their --max-sessions, learnt from Describe, summed
// over replicas); more wait in a FIFO queue of --max-queued-requests, each until its deadline
// (at most --max-queue-wait-seconds). Health is NOT_SERVING until the workers answer and the
// draft is checked against the target, and after that SERVING only while a target is ready;
// SIGTERM reports NOT_SERVING for --drain-notice-seconds, drains and exits.
// --http-listen HOST:PORT also serves the OpenAI-compatible HTTP API (http_server.h); off by
// default, and like every listener it binds only the address given (loopback in examples).
// --tls-cert/--tls-key serve gRPC and HTTP over TLS; --tls-ca makes the worker channels TLS,
// verifying the workers' certificates against that CA and presenting --worker-tls-cert/-key
// to workers that require mutual TLS. --api-keys-file requires `authorization: Bearer KEY`
// of every client (gRPC metadata or HTTP header; health stays open), reread on SIGHUP.
// --health-listen serves grpc.health.v1 alone in plaintext, for probes that cannot do TLS.
// Prints "tandem-coordinator listening on HOST:PORT (metrics on M)" once the port is bound,
// followed by " (http on HOST:PORT)" when HTTP is on.
// An ADDR that is a DNS name (dns:///NAME:PORT, or NAME:PORT) stands for every address it
// resolves to, each a replica, re-resolved every --resolve-interval-seconds: behind a
// Kubernetes headless Service, sessions spread over the pods and follow them as they change.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "core/base/status_macros.h"
#include "core/generation/speculation_defaults.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/generator_service.h"
#include "services/coordinator/http_server.h"
#include "wire/grpc_server.h"
#include "wire/logging.h"
#include "wire/metrics.h"
#include "wire/port_probe.h"
#include "wire/reload_signal.h"
#include "wire/startup_signals.h"
#include "wire/tls_credentials.h"

ABSL_FLAG(std::string, target, "", "target worker address(es), comma-separated");
ABSL_FLAG(std::string, draft, "", "draft worker address(es), comma-separated; empty: none");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address (port 0 picks a free one)");
ABSL_FLAG(std::string, http_listen, "",
          "OpenAI-compatible HTTP address (port 0 picks a free one); empty: no HTTP");
ABSL_FLAG(int, http_threads, 0, "HTTP handler threads; 0: the targets' concurrent requests + 8");
ABSL_FLAG(std::string, metrics_listen, "", "Prometheus /metrics address; empty: none");
ABSL_FLAG(std::string, draft_tokens, std::to_string(tandem::SpeculationDefaults::kDraftTokens),
          "guesses per round, or 'auto' to adapt");
ABSL_FLAG(int, max_sessions, 64,
          "named sessions remembered at once; a new one makes the least recently used idle "
          "one go (concurrent requests are bounded by the target workers' --max-sessions)");
ABSL_FLAG(int, max_queued_requests, 256,
          "requests waiting for a free target session; more are RESOURCE_EXHAUSTED");
ABSL_FLAG(double, max_queue_wait_seconds, 300,
          "longest wait in the queue when the client's deadline is later or unset");
ABSL_FLAG(double, session_idle_seconds, 300,
          "a named session unused this long is forgotten (keep it below the workers' "
          "--session-idle-seconds, so the coordinator closes its streams first)");
ABSL_FLAG(int64_t, max_prompt_bytes, 1 << 20,
          "longest prompt text (or chat messages together) in bytes");
ABSL_FLAG(int, max_message_bytes, 4 << 20, "largest request message the server receives");
ABSL_FLAG(int, max_tokens, tandem::SpeculationDefaults::kServerMaxTokens,
          "default max_tokens of a request");
ABSL_FLAG(bool, ngram_fallback, false,
          "requests that do not choose a speculation method use the n-gram (prompt-lookup) "
          "drafter while no draft worker serves them (none configured, or it failed)");
ABSL_FLAG(bool, local_tokenizer, true,
          "tokenize text and chat prompts in the coordinator with the target's own tokenizer "
          "(sent once at start-up; the target tokenizes when it does not match); false: a "
          "Tokenize call to the target for each prompt");
ABSL_FLAG(int, continue_tokens, tandem::SpeculationDefaults::kContinueTokens,
          "without a draft, tokens a busy target may draw alone after each verify's "
          "(one more per 4 sessions in its last step; 0: one token per verify)");
ABSL_FLAG(double, worker_wait_seconds, 120, "how long start-up waits for the workers");
ABSL_FLAG(double, drain_seconds, 10, "how long SIGTERM waits for in-flight requests");
ABSL_FLAG(double, drain_notice_seconds, 1,
          "how long SIGTERM reports NOT_SERVING before the listener closes");
ABSL_FLAG(double, draft_deadline_floor_ms, 50, "shortest deadline of a draft call");
ABSL_FLAG(double, draft_deadline_multiple, 4,
          "a draft call's deadline: this many times its recent p95 time per token");
ABSL_FLAG(double, draft_deadline_max_ms, 10000, "longest deadline of a draft call");
ABSL_FLAG(double, draft_cold_deadline_ms, 2000,
          "a draft call's deadline before its latency is known");
ABSL_FLAG(double, draft_backoff_ms, 1000,
          "first pause before a failed draft is used again (doubles per failure)");
ABSL_FLAG(double, draft_backoff_max_ms, 60000, "longest pause before a failed draft is used again");
ABSL_FLAG(double, target_timeout_seconds, 30,
          "deadline of each target call; a late target fails over to another replica");
ABSL_FLAG(double, failover_wait_seconds, 30,
          "how long a request waits for a ready target after its replica failed");
ABSL_FLAG(double, request_timeout_seconds, 600, "deadline of a request whose client sets none");
ABSL_FLAG(double, health_interval_ms, 500, "how often each worker's health is probed");
ABSL_FLAG(double, health_timeout_ms, 1000, "deadline of a worker health probe");
ABSL_FLAG(double, resolve_interval_seconds, 10,
          "how often --target/--draft DNS names are re-resolved (pods that come and go)");
ABSL_FLAG(double, keepalive_seconds, 10, "keepalive ping interval on worker channels");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain: serve gRPC and HTTP over TLS; empty: plaintext");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificate(s): talk to the workers over TLS, verifying their certificates "
          "against it; empty: plaintext to the workers");
ABSL_FLAG(std::string, worker_tls_cert, "",
          "PEM client certificate shown to workers that require mutual TLS (needs --tls-ca)");
ABSL_FLAG(std::string, worker_tls_key, "", "PEM private key of --worker-tls-cert");
ABSL_FLAG(std::string, api_keys_file, "",
          "API keys, one per line, reread on SIGHUP: clients must send 'authorization: Bearer "
          "KEY'; empty: no authentication");
ABSL_FLAG(std::string, health_listen, "",
          "plaintext address serving only grpc.health.v1, for probes without TLS; empty: none");
ABSL_FLAG(int, v, 0, "log verbosity: 1 logs each session, 2 each worker call (to stderr)");

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-coordinator: %s\n", message.c_str());
  return code;
}

absl::Duration Ms(const absl::Flag<double>& flag) {
  return absl::Milliseconds(absl::GetFlag(flag));
}
absl::Duration Sec(const absl::Flag<double>& flag) { return absl::Seconds(absl::GetFlag(flag)); }

// The deadline, failover and health flags; false (with a message) when one is out of range.
bool ReadDeadlineFlags(tandem::CoordinatorOptions& o, std::string* error) {
  tandem::DraftDeadlineOptions& d = o.pool.draft_deadline;
  d.floor = Ms(FLAGS_draft_deadline_floor_ms);
  d.multiple = absl::GetFlag(FLAGS_draft_deadline_multiple);
  d.ceiling = Ms(FLAGS_draft_deadline_max_ms);
  d.cold_deadline = Ms(FLAGS_draft_cold_deadline_ms);
  o.pool.backoff.initial = Ms(FLAGS_draft_backoff_ms);
  o.pool.backoff.max = Ms(FLAGS_draft_backoff_max_ms);
  o.pool.probe_interval = Ms(FLAGS_health_interval_ms);
  o.pool.probe_timeout = Ms(FLAGS_health_timeout_ms);
  o.target_timeout = Sec(FLAGS_target_timeout_seconds);
  o.failover_wait = Sec(FLAGS_failover_wait_seconds);
  o.max_request_time = Sec(FLAGS_request_timeout_seconds);
  o.worker_client.keepalive_time = Sec(FLAGS_keepalive_seconds);
  o.resolve_interval = Sec(FLAGS_resolve_interval_seconds);
  const absl::Status valid = tandem::ValidateDraftDeadlineOptions(d);
  if (!valid.ok()) {
    *error = std::string(valid.message());
    return false;
  }
  const absl::Duration zero = absl::ZeroDuration();
  if (o.pool.backoff.initial <= zero || o.pool.backoff.max < o.pool.backoff.initial ||
      o.pool.probe_interval <= zero || o.pool.probe_timeout <= zero || o.target_timeout <= zero ||
      o.failover_wait < zero || o.max_request_time <= zero || o.resolve_interval <= zero ||
      o.worker_client.keepalive_time < absl::Seconds(1)) {
    *error =
        "--draft-backoff-ms, --health-*-ms, --target-timeout-seconds, --request-timeout-seconds, "
        "--resolve-interval-seconds must be > 0 (backoff max >= backoff, keepalive >= 1 s, "
        "failover wait >= 0)";
    return false;
  }
  return true;
}

// The TLS and API key flags: the listeners' credentials, the worker channels', the keys.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> server;
  std::unique_ptr<tandem::ApiKeys> keys;  // null without --api-keys-file
};

absl::StatusOr<Security> ReadSecurityFlags(tandem::CoordinatorOptions& options) {
  Security security;
  ASSIGN_OR_RETURN(
      const tandem::TlsPem served,
      tandem::ReadTlsFiles({absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), ""}));
  ASSIGN_OR_RETURN(security.server, tandem::ServerCredentialsFor(served));
  ASSIGN_OR_RETURN(tandem::TlsPem workers,
                   tandem::ReadTlsFiles({absl::GetFlag(FLAGS_worker_tls_cert),
                                         absl::GetFlag(FLAGS_worker_tls_key), ""},
                                        "--worker-tls-"));
  ASSIGN_OR_RETURN(const tandem::TlsPem ca,
                   tandem::ReadTlsFiles({"", "", absl::GetFlag(FLAGS_tls_ca)}));
  if (!workers.cert.empty() && ca.ca.empty()) {
    return absl::InvalidArgumentError("--worker-tls-cert needs --tls-ca");
  }
  workers.ca = ca.ca;
  options.worker_client.credentials = tandem::ChannelCredentialsFor(workers);
  if (const std::string path = absl::GetFlag(FLAGS_api_keys_file); !path.empty()) {
    ASSIGN_OR_RETURN(security.keys, tandem::ApiKeys::Load(path));
  }
  return security;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::BlockTerminationSignals();
  absl::StatusOr<std::vector<std::string>> args = tandem::ParseCommandLine(
      argc, argv,
      {"tandem-coordinator", "0.1.0",
       "Runs speculative decoding over Tandem workers and serves tandem.v1.Generator.\n"
       "usage: tandem-coordinator --target ADDR[,ADDR...] [--draft ADDR[,ADDR...]]\n"
       "       [--listen HOST:PORT] [--http-listen HOST:PORT] [--metrics-listen HOST:PORT]\n"
       "       [--draft-tokens N|auto] [--max-sessions N] [--max-queued-requests N]\n"
       "       [--max-queue-wait-seconds S]\n"
       "       [--session-idle-seconds S] [--max-prompt-bytes N] [--max-message-bytes N] [-v N]\n"
       "       [--target-timeout-seconds S] [--failover-wait-seconds S]\n"
       "       [--draft-deadline-floor-ms MS] [--draft-deadline-multiple X]\n"
       "       [--draft-backoff-ms MS] [--health-interval-ms MS] [--drain-notice-seconds S]\n"
       "       [--tls-cert PEM --tls-key PEM] [--tls-ca PEM [--worker-tls-cert PEM\n"
       "       --worker-tls-key PEM]] [--api-keys-file FILE] [--health-listen HOST:PORT]\n"
       "       (--help lists all)",
       "services/coordinator/main.cc"});
  if (!args.ok()) return Fail(2, std::string(args.status().message()));
  if (!args->empty()) return Fail(2, "unexpected argument '" + (*args)[0] + "'");
  tandem::InitLogging(argv[0], absl::GetFlag(FLAGS_v));
  tandem::CoordinatorOptions options;
  options.targets = absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipEmpty());
  options.drafts = absl::StrSplit(absl::GetFlag(FLAGS_draft), ',', absl::SkipEmpty());
  if (options.targets.empty()) return Fail(2, "--target is required");
  const std::string k = absl::GetFlag(FLAGS_draft_tokens);
  if (k == "auto") {
    options.adaptive_draft = true;
  } else if (!absl::SimpleAtoi(k, &options.default_draft_tokens) ||
             options.default_draft_tokens < 1 ||
             options.default_draft_tokens > tandem::SpeculationLimits::kMaxDraftTokens) {
    return Fail(2, absl::StrCat("--draft-tokens: '", k, "' is not in [1, ",
                                tandem::SpeculationLimits::kMaxDraftTokens, "] or 'auto'"));
  }
  options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.default_max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.continue_tokens = absl::GetFlag(FLAGS_continue_tokens);
  options.ngram_fallback = absl::GetFlag(FLAGS_ngram_fallback);
  options.local_tokenizer = absl::GetFlag(FLAGS_local_tokenizer);
  options.worker_wait = absl::Seconds(absl::GetFlag(FLAGS_worker_wait_seconds));
  if (options.max_sessions < 1 || options.default_max_tokens < 1) {
    return Fail(2, "--max-sessions and --max-tokens must be >= 1");
  }
  options.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  const double queue_wait = absl::GetFlag(FLAGS_max_queue_wait_seconds);
  const double idle = absl::GetFlag(FLAGS_session_idle_seconds);
  if (options.max_queued_requests < 0 || !(queue_wait >= 0) || !(idle > 0)) {
    return Fail(2,
                "--max-queued-requests and --max-queue-wait-seconds must be >= 0, "
                "--session-idle-seconds > 0");
  }
  options.max_queue_wait = absl::Seconds(queue_wait);
  options.session_idle = absl::Seconds(idle);
  options.limits.max_prompt_bytes = absl::GetFlag(FLAGS_max_prompt_bytes);
  const int max_message = absl::GetFlag(FLAGS_max_message_bytes);
  if (options.limits.max_prompt_bytes < 1 || max_message < options.limits.max_prompt_bytes) {
    return Fail(2, "--max-prompt-bytes must be >= 1 and --max-message-bytes at least as large");
  }
  if (std::string error; !ReadDeadlineFlags(options, &error)) return Fail(2, error);
  if (absl::GetFlag(FLAGS_http_threads) < 0) return Fail(2, "--http-threads must be >= 0");
  // Before any thread starts (gRPC's credentials start some): SIGHUP then reaches only the
  // watcher below instead of ending the process.
  if (!absl::GetFlag(FLAGS_api_keys_file).empty()) tandem::BlockReloadSignal();
  absl::StatusOr<Security> security = ReadSecurityFlags(options);
  if (!security.ok()) return Fail(2, security.status().ToString());
  std::unique_ptr<tandem::ReloadOnSignal> reload;  // SIGHUP rereads the API keys
  if (security->keys != nullptr) {
    tandem::ApiKeys* keys = security->keys.get();
    reload = std::make_unique<tandem::ReloadOnSignal>([keys] {
      const absl::Status reloaded = keys->Reload();
      const std::string line =
          reloaded.ok() ? absl::StrCat(keys->size(), " API keys from ", keys->path())
                        : absl::StrCat("keeping the API keys in force: ", reloaded.ToString());
      std::fprintf(stderr, "tandem-coordinator: SIGHUP: %s\n", line.c_str());
    });
  }
  if (const std::string http = absl::GetFlag(FLAGS_http_listen); !http.empty()) {
    if (absl::Status valid = tandem::CheckHttpListen(http); !valid.ok()) {
      return Fail(2, std::string(valid.message()));
    }
  }

  auto registry = std::make_shared<prometheus::Registry>();
  tandem::CoordinatorMetrics metrics(*registry);
  // The service starts once the coordinator exists; until then health says NOT_SERVING.
  std::unique_ptr<tandem::Coordinator> coordinator;
  std::unique_ptr<tandem::GeneratorService> service;
  absl::StatusOr<std::unique_ptr<tandem::GrpcServer>> server;
  // The ports are bound after the workers answer (up to --worker-wait-seconds): refuse busy
  // ones now, not then.
  for (const std::string& address :
       {absl::GetFlag(FLAGS_listen), absl::GetFlag(FLAGS_metrics_listen),
        absl::GetFlag(FLAGS_http_listen), absl::GetFlag(FLAGS_health_listen)}) {
    if (absl::Status free = tandem::CheckPortFree(address); !free.ok()) {
      return Fail(2, free.ToString());
    }
  }
  tandem::ExitDuringStartup startup("tandem-coordinator");  // waiting for workers can take long
  absl::StatusOr<std::unique_ptr<tandem::Coordinator>> created =
      tandem::Coordinator::Create(options, &metrics);
  if (!created.ok()) return Fail(2, created.status().ToString());
  coordinator = *std::move(created);
  service = std::make_unique<tandem::GeneratorService>(coordinator.get(), security->keys.get());
  tandem::GrpcServerOptions server_options;
  server_options.listen = absl::GetFlag(FLAGS_listen);
  server_options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  server_options.health_listen = absl::GetFlag(FLAGS_health_listen);
  server_options.drain_notice = Sec(FLAGS_drain_notice_seconds);
  server_options.max_message_bytes = max_message;  // clients send prompts, not vocabularies
  server_options.credentials = security->server;
  server = tandem::GrpcServer::Start(server_options, {service.get()}, registry);
  if (!server.ok()) return Fail(2, server.status().ToString());
  std::unique_ptr<tandem::HttpServer> http;
  std::string http_line;
  if (!absl::GetFlag(FLAGS_http_listen).empty()) {
    tandem::HttpServerOptions http_options;
    http_options.listen = absl::GetFlag(FLAGS_http_listen);
    http_options.limits = options.limits;
    http_options.max_body_bytes = static_cast<size_t>(max_message);
    http_options.threads = absl::GetFlag(FLAGS_http_threads);
    http_options.tls_cert = absl::GetFlag(FLAGS_tls_cert);
    http_options.tls_key = absl::GetFlag(FLAGS_tls_key);
    http_options.api_keys = security->keys.get();
    absl::StatusOr<std::unique_ptr<tandem::HttpServer>> started =
        tandem::HttpServer::Start(http_options, coordinator.get());
    if (!started.ok()) return Fail(2, started.status().ToString());
    http = *std::move(started);
    http_line = " (http on " + http->address() + ")";
  }
  if ((*server)->health_port() != 0) {
    http_line += " (health on " + std::to_string((*server)->health_port()) + ")";
  }
  std::printf("tandem-coordinator listening on %s (metrics on %d)%s\n",
              (*server)->address().c_str(), (*server)->metrics_port(), http_line.c_str());
  std::fflush(stdout);
  // Signals go to WaitForTerminationSignal (a drain) before anyone can see SERVING.
  startup.Done();
  // SERVING while a target is ready (the workers' health is polled).
  tandem::GrpcServer* grpc_server = server->get();
  tandem::HttpServer* http_server = http.get();
  coordinator->SetHealthListener([grpc_server, http_server](bool serving) {
    grpc_server->SetServing(serving);
    if (http_server != nullptr) http_server->SetServing(serving);
  });

  tandem::WaitForTerminationSignal();
  std::fprintf(stderr, "tandem-coordinator: draining\n");
  coordinator->SetHealthListener(nullptr);
  const absl::Duration drain = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  std::thread http_drain;  // HTTP requests finish alongside the gRPC ones, then are cancelled
  if (http != nullptr) {
    http->SetServing(false);
    http_drain = std::thread([&http, drain] { http->Drain(drain); });
  }
  (*server)->Drain(drain);
  if (http_drain.joinable()) http_drain.join();
  return 0;
}
