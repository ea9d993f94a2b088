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
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "services/coordinator/api_keys.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_options.h"
#include "services/coordinator/generator_service.h"
#include "services/coordinator/http_server.h"
#include "wire/grpc_server.h"
#include "wire/logging.h"
#include "wire/metrics.h"
#include "wire/port_probe.h"
#include "wire/reload_signal.h"
#include "wire/startup_signals.h"
#include "wire/tls_credentials.h"

namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tandem-coordinator: %s\n", message.c_str());
  return code;
}

// The TLS and API key files: the listeners' credentials, the worker channels', the keys.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> server;
  std::shared_ptr<grpc::ChannelCredentials> workers;
  std::unique_ptr<tandem::ApiKeys> keys;  // null without --api-keys-file
};

absl::StatusOr<Security> ReadSecurity(const tandem::CoordinatorProcessOptions& o) {
  Security security;
  ASSIGN_OR_RETURN(const tandem::TlsPem served, tandem::ReadTlsFiles({o.tls_cert, o.tls_key, ""}));
  ASSIGN_OR_RETURN(security.server, tandem::ServerCredentialsFor(served));
  ASSIGN_OR_RETURN(
      tandem::TlsPem workers,
      tandem::ReadTlsFiles({o.worker_tls_cert, o.worker_tls_key, ""}, "--worker-tls-"));
  ASSIGN_OR_RETURN(const tandem::TlsPem ca, tandem::ReadTlsFiles({"", "", o.tls_ca}));
  if (!workers.cert.empty() && ca.ca.empty()) {
    return absl::InvalidArgumentError("--worker-tls-cert needs --tls-ca");
  }
  workers.ca = ca.ca;
  security.workers = tandem::ChannelCredentialsFor(workers);
  if (!o.api_keys_file.empty()) {
    ASSIGN_OR_RETURN(security.keys, tandem::ApiKeys::Load(o.api_keys_file));
  }
  return security;
}

// SIGHUP rereads the API keys (null without them).
std::unique_ptr<tandem::ReloadOnSignal> ReloadOnSighup(tandem::ApiKeys* keys) {
  if (keys == nullptr) return nullptr;
  return std::make_unique<tandem::ReloadOnSignal>([keys] {
    const absl::Status reloaded = keys->Reload();
    const std::string line =
        reloaded.ok() ? absl::StrCat(keys->size(), " API keys from ", keys->path())
                      : absl::StrCat("keeping the API keys in force: ", reloaded.ToString());
    std::fprintf(stderr, "tandem-coordinator: SIGHUP: %s\n", line.c_str());
  });
}

// The ports are bound after the workers answer (up to --worker-wait-seconds): refuse bad and
// busy ones now, not then. The status's message is what tandem-coordinator prints.
absl::Status CheckAddresses(const tandem::CoordinatorProcessOptions& o) {
  if (!o.http.listen.empty()) {
    if (absl::Status valid = tandem::CheckHttpListen(o.http.listen); !valid.ok()) {
      return absl::InvalidArgumentError(valid.message());
    }
  }
  for (const std::string& address :
       {o.server.listen, o.server.metrics_listen, o.http.listen, o.server.health_listen}) {
    if (absl::Status free = tandem::CheckPortFree(address); !free.ok()) {
      return absl::InvalidArgumentError(free.ToString());
    }
  }
  return absl::OkStatus();
}

// The gRPC server and the optional HTTP one, serving `coordinator` (health NOT_SERVING).
struct Servers {
  std::unique_ptr<tandem::GeneratorService> service;
  std::unique_ptr<tandem::GrpcServer> grpc;
  std::unique_ptr<tandem::HttpServer> http;  // null without --http-listen
};

absl::StatusOr<Servers> Serve(const tandem::CoordinatorProcessOptions& o,
                              tandem::Coordinator* coordinator, const Security& security,
                              std::shared_ptr<prometheus::Registry> registry) {
  Servers servers;
  servers.service = std::make_unique<tandem::GeneratorService>(coordinator, security.keys.get());
  tandem::GrpcServerOptions server_options = o.server;
  server_options.credentials = security.server;
  ASSIGN_OR_RETURN(servers.grpc, tandem::GrpcServer::Start(server_options, {servers.service.get()},
                                                           std::move(registry)));
  if (o.http.listen.empty()) return servers;
  tandem::HttpServerOptions http_options = o.http;  // listen, threads and the front's limits
  http_options.limits = o.coordinator.limits;
  http_options.max_body_bytes = static_cast<size_t>(o.server.max_message_bytes);
  http_options.tls_cert = o.tls_cert;
  http_options.tls_key = o.tls_key;
  http_options.api_keys = security.keys.get();
  ASSIGN_OR_RETURN(servers.http, tandem::HttpServer::Start(http_options, coordinator));
  return servers;
}

void PrintListening(const Servers& servers) {
  std::string more;
  if (servers.http != nullptr) more = " (http on " + servers.http->address() + ")";
  if (servers.grpc->health_port() != 0) {
    more += " (health on " + std::to_string(servers.grpc->health_port()) + ")";
  }
  std::printf("tandem-coordinator listening on %s (metrics on %d)%s\n",
              servers.grpc->address().c_str(), servers.grpc->metrics_port(), more.c_str());
  std::fflush(stdout);
}

// HTTP requests finish alongside the gRPC ones, then are cancelled.
void Drain(Servers& servers, absl::Duration drain) {
  std::thread http_drain;
  if (servers.http != nullptr) {
    servers.http->SetServing(false);
    http_drain = std::thread([&servers, drain] { servers.http->Drain(drain); });
  }
  servers.grpc->Drain(drain);
  if (http_drain.joinable()) http_drain.join();
}

// Waits for the workers, serves until SIGTERM, then drains. Exit status 2 when it cannot start.
int Run(const tandem::CoordinatorProcessOptions& options) {
  // Before any thread starts (gRPC's credentials start some): SIGHUP then reaches only the
  // watcher below instead of ending the process.
  if (!options.api_keys_file.empty()) tandem::BlockReloadSignal();
  absl::StatusOr<Security> security = ReadSecurity(options);
  if (!security.ok()) return Fail(2, security.status().ToString());
  const std::unique_ptr<tandem::ReloadOnSignal> reload = ReloadOnSighup(security->keys.get());
  auto registry = std::make_shared<prometheus::Registry>();
  tandem::CoordinatorMetrics metrics(*registry);
  if (absl::Status free = CheckAddresses(options); !free.ok()) {
    return Fail(2, std::string(free.message()));
  }
  tandem::ExitDuringStartup startup("tandem-coordinator");  // waiting for workers can take long
  tandem::CoordinatorOptions coordinator_options = options.coordinator;
  coordinator_options.worker_client.credentials = security->workers;
  absl::StatusOr<std::unique_ptr<tandem::Coordinator>> coordinator =
      tandem::Coordinator::Create(coordinator_options, &metrics);
  if (!coordinator.ok()) return Fail(2, coordinator.status().ToString());
  absl::StatusOr<Servers> servers = Serve(options, coordinator->get(), *security, registry);
  if (!servers.ok()) return Fail(2, servers.status().ToString());
  PrintListening(*servers);
  // Signals go to WaitForTerminationSignal (a drain) before anyone can see SERVING.
  startup.Done();
  // SERVING while a target is ready (the workers' health is polled).
  tandem::GrpcServer* grpc_server = servers->grpc.get();
  tandem::HttpServer* http_server = servers->http.get();
  (*coordinator)->SetHealthListener([grpc_server, http_server](bool serving) {
    grpc_server->SetServing(serving);
    if (http_server != nullptr) http_server->SetServing(serving);
  });

  tandem::WaitForTerminationSignal();
  std::fprintf(stderr, "tandem-coordinator: draining\n");
  (*coordinator)->SetHealthListener(nullptr);
  Drain(*servers, options.drain);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::BlockTerminationSignals();
  absl::StatusOr<tandem::CoordinatorProcessOptions> options =
      tandem::CoordinatorOptionsFromFlags(argc, argv);
  if (!options.ok()) return Fail(2, std::string(options.status().message()));
  tandem::InitLogging(argv[0], options->verbosity);
  return Run(*options);
}
