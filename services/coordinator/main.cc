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
// Prints "tandem-coordinator listening on HOST:PORT (metrics on M)" once the port is bound,
// followed by " (http on HOST:PORT)" when HTTP is on.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "services/common/grpc_server.h"
#include "services/common/logging.h"
#include "services/common/metrics.h"
#include "services/common/port_probe.h"
#include "services/common/startup_signals.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/generator_service.h"
#include "services/coordinator/http_server.h"

ABSL_FLAG(std::string, target, "", "target worker address(es), comma-separated");
ABSL_FLAG(std::string, draft, "", "draft worker address(es), comma-separated; empty: none");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address (port 0 picks a free one)");
ABSL_FLAG(std::string, http_listen, "",
          "OpenAI-compatible HTTP address (port 0 picks a free one); empty: no HTTP");
ABSL_FLAG(int, http_threads, 0, "HTTP handler threads; 0: the targets' concurrent requests + 8");
ABSL_FLAG(std::string, metrics_listen, "", "Prometheus /metrics address; empty: none");
ABSL_FLAG(std::string, draft_tokens, "4", "guesses per round, or 'auto' to adapt");
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
ABSL_FLAG(int, max_tokens, 256, "default max_tokens of a request");
ABSL_FLAG(bool, ngram_fallback, false,
          "requests that do not choose a speculation method use the n-gram (prompt-lookup) "
          "drafter while no draft worker serves them (none configured, or it failed)");
ABSL_FLAG(int, continue_tokens, 3,
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
ABSL_FLAG(double, keepalive_seconds, 10, "keepalive ping interval on worker channels");
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
  const absl::Status valid = tandem::ValidateDraftDeadlineOptions(d);
  if (!valid.ok()) {
    *error = std::string(valid.message());
    return false;
  }
  const absl::Duration zero = absl::ZeroDuration();
  if (o.pool.backoff.initial <= zero || o.pool.backoff.max < o.pool.backoff.initial ||
      o.pool.probe_interval <= zero || o.pool.probe_timeout <= zero || o.target_timeout <= zero ||
      o.failover_wait < zero || o.max_request_time <= zero ||
      o.worker_client.keepalive_time < absl::Seconds(1)) {
    *error =
        "--draft-backoff-ms, --health-*-ms, --target-timeout-seconds, --request-timeout-seconds "
        "must be > 0 (backoff max >= backoff, keepalive >= 1 s, failover wait >= 0)";
    return false;
  }
  return true;
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
             options.default_draft_tokens < 1 || options.default_draft_tokens > 16) {
    return Fail(2, "--draft-tokens: '" + k + "' is not in [1, 16] or 'auto'");
  }
  options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.default_max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.continue_tokens = absl::GetFlag(FLAGS_continue_tokens);
  options.ngram_fallback = absl::GetFlag(FLAGS_ngram_fallback);
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
        absl::GetFlag(FLAGS_http_listen)}) {
    if (absl::Status free = tandem::CheckPortFree(address); !free.ok()) {
      return Fail(2, free.ToString());
    }
  }
  tandem::ExitDuringStartup startup("tandem-coordinator");  // waiting for workers can take long
  absl::StatusOr<std::unique_ptr<tandem::Coordinator>> created =
      tandem::Coordinator::Create(options, &metrics);
  if (!created.ok()) return Fail(2, created.status().ToString());
  coordinator = *std::move(created);
  service = std::make_unique<tandem::GeneratorService>(coordinator.get());
  tandem::GrpcServerOptions server_options;
  server_options.listen = absl::GetFlag(FLAGS_listen);
  server_options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  server_options.drain_notice = Sec(FLAGS_drain_notice_seconds);
  server_options.max_message_bytes = max_message;  // clients send prompts, not vocabularies
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
    absl::StatusOr<std::unique_ptr<tandem::HttpServer>> started =
        tandem::HttpServer::Start(http_options, coordinator.get());
    if (!started.ok()) return Fail(2, started.status().ToString());
    http = *std::move(started);
    http_line = " (http on " + http->address() + ")";
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
