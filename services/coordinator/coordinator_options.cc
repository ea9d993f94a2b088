#include "services/coordinator/coordinator_options.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/command_line.h"
#include "core/base/status_macros.h"
#include "core/generation/speculation_defaults.h"
#include "services/coordinator/draft_deadline.h"
#include "services/coordinator/served_model_names.h"  // #30 front
#include "services/coordinator/worker_pool.h"

ABSL_FLAG(std::string, target, "", "target worker address(es), comma-separated");
ABSL_FLAG(std::string, draft, "", "draft worker address(es), comma-separated; empty: none");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address (port 0 picks a free one)");
ABSL_FLAG(std::string, http_listen, "",
          "OpenAI-compatible HTTP address (port 0 picks a free one); empty: no HTTP");
ABSL_FLAG(int, http_threads, 0, "HTTP handler threads; 0: the targets' concurrent requests + 8");
// The HTTP front's limits; the defaults are HttpServerOptions' own.
ABSL_FLAG(int64_t, http_max_header_bytes,
          static_cast<int64_t>(tandem::HttpServerOptions().max_header_bytes),
          "the request line and header lines of an HTTP request together, at most (431)");
ABSL_FLAG(int, http_max_headers, tandem::HttpServerOptions().max_header_count,
          "header lines of an HTTP request, at most (431)");
ABSL_FLAG(double, http_request_timeout_seconds,
          absl::ToDoubleSeconds(tandem::HttpServerOptions().request_timeout),
          "a whole HTTP request must arrive within this, first byte to last (408)");
ABSL_FLAG(double, http_idle_timeout_seconds,
          absl::ToDoubleSeconds(tandem::HttpServerOptions().idle_timeout),
          "an idle keep-alive (or silent new) HTTP connection is closed after this");
ABSL_FLAG(int, http_max_connections, tandem::HttpServerOptions().max_connections,
          "open HTTP connections, at most (then the oldest idle one is closed)");
ABSL_FLAG(int, http_max_connections_per_address,
          tandem::HttpServerOptions().max_connections_per_address,
          "open HTTP connections from one client address (raise it behind a proxy)");
ABSL_FLAG(int64_t, http_max_buffered_body_bytes,
          static_cast<int64_t>(tandem::HttpServerOptions().max_buffered_body_bytes),
          "request bodies held at once across connections (then 503); >= --max-message-bytes");
// --- #30 front ---
ABSL_FLAG(std::string, served_model_name, "",
          "the name(s) clients use for the target in `model`, comma-separated (the first is "
          "canonical); empty: the target's own name");
ABSL_FLAG(std::string, cors_origins, "",
          "origins whose browser pages may call the HTTP API (CORS), comma-separated "
          "http(s)://HOST[:PORT], or '*' for any; empty: none (no CORS headers)");
// --- end ---
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
// --- #30 n choices ---
ABSL_FLAG(int, max_choices, tandem::RequestLimits().max_choices,
          "most choices (n) one request may ask for; each runs as a request of its own");
// --- end ---
ABSL_FLAG(int, max_tokens, tandem::SpeculationDefaults::kServerMaxTokens,
          "default max_tokens of a request");
ABSL_FLAG(bool, ngram_fallback, false,
          "requests that do not choose a speculation method use the n-gram (prompt-lookup) "
          "drafter while no draft worker serves them (none configured, or it failed)");
ABSL_FLAG(bool, local_tokenizer, true,
          "tokenize text and chat prompts in the coordinator with the target's own tokenizer "
          "(sent once at start-up; the target tokenizes when it does not match); false: a "
          "Tokenize call to the target for each prompt");
ABSL_FLAG(std::string, tool_call_format, "auto",
          "how the model writes tool calls: auto (from its chat template and special tokens), "
          "none (requests with tools are refused), or one of llama3_json, hermes, mistral, "
          "functionary_v3.1, functionary_v3.2, firefunction_v2, command_r, deepseek_r1");
ABSL_FLAG(std::string, reasoning_format, "auto",
          "how the model reasons: auto (from its chat template and special tokens), think "
          "(<think>...</think> goes to reasoning_content) or none (left in the content)");
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
ABSL_FLAG(double, draft_liveness_floor_ms,
          absl::ToDoubleMilliseconds(tandem::DraftDeadlineOptions().liveness_floor),
          "a draft call unanswered this long (at least) has failed: the draft is dropped");
ABSL_FLAG(double, draft_liveness_multiple, tandem::DraftDeadlineOptions().liveness_multiple,
          "a draft call unanswered past this many times its recent p95 time per token has failed");
ABSL_FLAG(double, reconnect_grace_seconds,
          absl::ToDoubleSeconds(tandem::WorkerPoolOptions().reconnect_grace),
          "how long a target that stopped answering counts as restarting: requests wait for it "
          "(up to --failover-wait-seconds); past it, with no target ready or loading, they fail "
          "at once");
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

namespace tandem {
namespace {

constexpr char kUsage[] =
    "Runs speculative decoding over Tandem workers and serves tandem.v1.Generator.\n"
    "usage: tandem-coordinator --target ADDR[,ADDR...] [--draft ADDR[,ADDR...]]\n"
    "       [--listen HOST:PORT] [--http-listen HOST:PORT] [--metrics-listen HOST:PORT]\n"
    "       [--draft-tokens N|auto] [--max-sessions N] [--max-queued-requests N]\n"
    "       [--max-queue-wait-seconds S]\n"
    "       [--session-idle-seconds S] [--max-prompt-bytes N] [--max-message-bytes N] [-v N]\n"
    "       [--target-timeout-seconds S] [--failover-wait-seconds S]\n"
    "       [--draft-deadline-floor-ms MS] [--draft-deadline-multiple X]\n"
    "       [--draft-backoff-ms MS] [--health-interval-ms MS] [--drain-notice-seconds S]\n"
    "       [--served-model-name NAME[,NAME...]] [--cors-origins ORIGIN[,ORIGIN...]|*]\n"
    "       [--tls-cert PEM --tls-key PEM] [--tls-ca PEM [--worker-tls-cert PEM\n"
    "       --worker-tls-key PEM]] [--api-keys-file FILE] [--health-listen HOST:PORT]\n"
    "       (--help lists all)";

absl::Duration Ms(const absl::Flag<double>& flag) {
  return absl::Milliseconds(absl::GetFlag(flag));
}
absl::Duration Sec(const absl::Flag<double>& flag) { return absl::Seconds(absl::GetFlag(flag)); }

// --target, --draft, --draft-tokens and the per-request defaults.
absl::Status ReadWorkerFlags(CoordinatorOptions& o) {
  o.targets = absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipEmpty());
  o.drafts = absl::StrSplit(absl::GetFlag(FLAGS_draft), ',', absl::SkipEmpty());
  if (o.targets.empty()) return absl::InvalidArgumentError("--target is required");
  const std::string k = absl::GetFlag(FLAGS_draft_tokens);
  if (k == "auto") {
    o.adaptive_draft = true;
  } else if (!absl::SimpleAtoi(k, &o.default_draft_tokens) || o.default_draft_tokens < 1 ||
             o.default_draft_tokens > SpeculationLimits::kMaxDraftTokens) {
    return absl::InvalidArgumentError(absl::StrCat("--draft-tokens: '", k, "' is not in [1, ",
                                                   SpeculationLimits::kMaxDraftTokens,
                                                   "] or 'auto'"));
  }
  o.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  o.default_max_tokens = absl::GetFlag(FLAGS_max_tokens);
  o.continue_tokens = absl::GetFlag(FLAGS_continue_tokens);
  o.ngram_fallback = absl::GetFlag(FLAGS_ngram_fallback);
  o.local_tokenizer = absl::GetFlag(FLAGS_local_tokenizer);
  o.output_syntax.tool_call_format = absl::GetFlag(FLAGS_tool_call_format);
  o.output_syntax.reasoning_format = absl::GetFlag(FLAGS_reasoning_format);
  o.worker_wait = Sec(FLAGS_worker_wait_seconds);
  if (o.max_sessions < 1 || o.default_max_tokens < 1) {
    return absl::InvalidArgumentError("--max-sessions and --max-tokens must be >= 1");
  }
  return absl::OkStatus();
}

// The queue, the named sessions and the size limits.
absl::Status ReadLimitFlags(CoordinatorOptions& o, int* max_message_bytes) {
  o.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  const double queue_wait = absl::GetFlag(FLAGS_max_queue_wait_seconds);
  const double idle = absl::GetFlag(FLAGS_session_idle_seconds);
  if (o.max_queued_requests < 0 || !(queue_wait >= 0) || !(idle > 0)) {
    return absl::InvalidArgumentError(
        "--max-queued-requests and --max-queue-wait-seconds must be >= 0, "
        "--session-idle-seconds > 0");
  }
  o.max_queue_wait = absl::Seconds(queue_wait);
  o.session_idle = absl::Seconds(idle);
  o.limits.max_prompt_bytes = absl::GetFlag(FLAGS_max_prompt_bytes);
  // --- #30 n choices ---
  o.limits.max_choices = absl::GetFlag(FLAGS_max_choices);
  if (o.limits.max_choices < 1) return absl::InvalidArgumentError("--max-choices must be >= 1");
  // --- end ---
  *max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (o.limits.max_prompt_bytes < 1 || *max_message_bytes < o.limits.max_prompt_bytes) {
    return absl::InvalidArgumentError(
        "--max-prompt-bytes must be >= 1 and --max-message-bytes at least as large");
  }
  return absl::OkStatus();
}

// The deadline, failover and health flags.
absl::Status ReadDeadlineFlags(CoordinatorOptions& o) {
  DraftDeadlineOptions& d = o.pool.draft_deadline;
  d.floor = Ms(FLAGS_draft_deadline_floor_ms);
  d.multiple = absl::GetFlag(FLAGS_draft_deadline_multiple);
  d.ceiling = Ms(FLAGS_draft_deadline_max_ms);
  d.cold_deadline = Ms(FLAGS_draft_cold_deadline_ms);
  d.liveness_floor = Ms(FLAGS_draft_liveness_floor_ms);
  d.liveness_multiple = absl::GetFlag(FLAGS_draft_liveness_multiple);
  o.pool.reconnect_grace = Sec(FLAGS_reconnect_grace_seconds);
  o.pool.backoff.initial = Ms(FLAGS_draft_backoff_ms);
  o.pool.backoff.max = Ms(FLAGS_draft_backoff_max_ms);
  o.pool.probe_interval = Ms(FLAGS_health_interval_ms);
  o.pool.probe_timeout = Ms(FLAGS_health_timeout_ms);
  o.target_timeout = Sec(FLAGS_target_timeout_seconds);
  o.failover_wait = Sec(FLAGS_failover_wait_seconds);
  o.max_request_time = Sec(FLAGS_request_timeout_seconds);
  o.worker_client.keepalive_time = Sec(FLAGS_keepalive_seconds);
  o.resolve_interval = Sec(FLAGS_resolve_interval_seconds);
  const absl::Status valid = ValidateDraftDeadlineOptions(d);
  if (!valid.ok()) return absl::InvalidArgumentError(valid.message());
  const absl::Duration zero = absl::ZeroDuration();
  if (o.pool.backoff.initial <= zero || o.pool.backoff.max < o.pool.backoff.initial ||
      o.pool.probe_interval <= zero || o.pool.probe_timeout <= zero || o.target_timeout <= zero ||
      o.failover_wait < zero || o.max_request_time <= zero || o.resolve_interval <= zero ||
      o.pool.reconnect_grace < zero || o.worker_client.keepalive_time < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        "--draft-backoff-ms, --health-*-ms, --target-timeout-seconds, --request-timeout-seconds, "
        "--resolve-interval-seconds must be > 0 (backoff max >= backoff, keepalive >= 1 s, "
        "failover wait and --reconnect-grace-seconds >= 0)");
  }
  return absl::OkStatus();
}

// --http-listen, --http-threads and the HTTP front's limits.
absl::Status ReadHttpFlags(int64_t max_message_bytes, HttpServerOptions& h) {
  h.listen = absl::GetFlag(FLAGS_http_listen);
  h.threads = absl::GetFlag(FLAGS_http_threads);
  if (h.threads < 0) return absl::InvalidArgumentError("--http-threads must be >= 0");
  const int64_t header_bytes = absl::GetFlag(FLAGS_http_max_header_bytes);
  const int64_t buffered = absl::GetFlag(FLAGS_http_max_buffered_body_bytes);
  h.max_header_count = absl::GetFlag(FLAGS_http_max_headers);
  h.request_timeout = Sec(FLAGS_http_request_timeout_seconds);
  h.idle_timeout = Sec(FLAGS_http_idle_timeout_seconds);
  h.max_connections = absl::GetFlag(FLAGS_http_max_connections);
  h.max_connections_per_address = absl::GetFlag(FLAGS_http_max_connections_per_address);
  if (header_bytes < 256 || h.max_header_count < 1 || h.request_timeout <= absl::ZeroDuration() ||
      h.idle_timeout <= absl::ZeroDuration() || h.max_connections < 1 ||
      h.max_connections_per_address < 1 || buffered < max_message_bytes) {
    return absl::InvalidArgumentError(
        "--http-max-header-bytes must be >= 256, --http-max-headers, --http-max-connections and "
        "--http-max-connections-per-address >= 1, the --http-*-timeout-seconds > 0, and "
        "--http-max-buffered-body-bytes >= --max-message-bytes");
  }
  h.max_header_bytes = static_cast<size_t>(header_bytes);
  h.max_buffered_body_bytes = static_cast<size_t>(buffered);
  ASSIGN_OR_RETURN(h.cors, CorsPolicy::Parse(absl::GetFlag(FLAGS_cors_origins)));  // #30 front
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CoordinatorProcessOptions> CoordinatorOptionsFromFlags(int argc, char** argv) {
  ASSIGN_OR_RETURN(const std::vector<std::string> args,
                   ParseCommandLine(argc, argv,
                                    {"tandem-coordinator", "0.1.0", kUsage,
                                     "services/coordinator/coordinator_options.cc"}));
  if (!args.empty()) return absl::InvalidArgumentError("unexpected argument '" + args[0] + "'");
  CoordinatorProcessOptions options;
  options.verbosity = absl::GetFlag(FLAGS_v);
  RETURN_IF_ERROR(ReadWorkerFlags(options.coordinator));
  // Clients send prompts, not vocabularies: the gRPC limit is --max-message-bytes.
  RETURN_IF_ERROR(ReadLimitFlags(options.coordinator, &options.server.max_message_bytes));
  RETURN_IF_ERROR(ReadDeadlineFlags(options.coordinator));
  RETURN_IF_ERROR(ReadHttpFlags(options.server.max_message_bytes, options.http));
  // #30 front
  ASSIGN_OR_RETURN(options.coordinator.served_model_names,
                   ParseServedModelNames(absl::GetFlag(FLAGS_served_model_name)));
  options.server.listen = absl::GetFlag(FLAGS_listen);
  options.server.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.server.health_listen = absl::GetFlag(FLAGS_health_listen);
  options.server.drain_notice = Sec(FLAGS_drain_notice_seconds);
  options.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  options.worker_tls_cert = absl::GetFlag(FLAGS_worker_tls_cert);
  options.worker_tls_key = absl::GetFlag(FLAGS_worker_tls_key);
  options.api_keys_file = absl::GetFlag(FLAGS_api_keys_file);
  options.drain = Sec(FLAGS_drain_seconds);
  return options;
}

}  // namespace tandem
