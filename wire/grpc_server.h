// Runs a gRPC server the way every Tandem process does: the given services plus standard
// health checking (grpc.health.v1) and server reflection (grpc.reflection.v1 and v1alpha,
// both able to describe grpc.health.v1), an optional Prometheus /metrics endpoint, and a
// graceful drain; TLS or mutual TLS when given credentials (tls_credentials.h), and a
// plaintext health-only port when asked (health_listener.h). A busy port is refused
// (SO_REUSEPORT is off: a second process never shares a port with the first), the gRPC port
// and the metrics port alike.
//
//   ASSIGN_OR_RETURN(auto server, GrpcServer::Start(options, {&service}, registry));
//   server->SetServing(true);             // after the model has loaded
//   WaitForTerminationSignal();           // SIGTERM or SIGINT
//   server->Drain(absl::Seconds(10));     // stop accepting, finish in-flight calls
//
// Thread-safe.
#ifndef TANDEM_WIRE_GRPC_SERVER_H_
#define TANDEM_WIRE_GRPC_SERVER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/impl/codegen/service_type.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "wire/health_listener.h"

namespace tandem {

struct GrpcServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string metrics_listen;          // empty: no /metrics endpoint
  // A plaintext port serving only grpc.health.v1 (health_listener.h), for probes that cannot
  // speak TLS; empty: none.
  std::string health_listen = "";
  int max_message_bytes = 64 << 20;  // vocabularies travel in Describe
  // TLS or mutual TLS of the gRPC listener (tls_credentials.h); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials = nullptr;
  // How long Drain reports NOT_SERVING before it closes the listener, so that health checkers
  // (a load balancer, a readiness probe) see the drain instead of a refused connection.
  absl::Duration drain_notice = absl::ZeroDuration();
};

class GrpcServer {
 public:
  // kInvalidArgument (not HOST:PORT) / kUnavailable (in use, cannot bind) naming the address
  // when it cannot listen, the gRPC address or the metrics one.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(
      const GrpcServerOptions& options, const std::vector<grpc::Service*>& services,
      std::shared_ptr<prometheus::Registry> registry);
  ~GrpcServer();

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }  // 0 without metrics
  int health_port() const;                            // 0 without health_listen
  std::string address() const;                        // host:port actually bound

  // The overall health status (service ""), NOT_SERVING until set. Ignored once Drain began
  // (a health watcher on another thread cannot undo the drain).
  void SetServing(bool serving);
  // Health service kLivenessService is SERVING from Start until the listener closes: a
  // liveness probe asks it, since "" may be NOT_SERVING for a process that is fine (a
  // coordinator whose targets are down, a worker loading its model).
  static constexpr const char* kLivenessService = "liveness";

  // Marks NOT_SERVING, waits `drain_notice`, stops accepting calls and waits up to `timeout`
  // for in-flight calls to finish, then cancels what is left. Idempotent.
  void Drain(absl::Duration timeout);

  grpc::Server* server() { return server_.get(); }

 private:
  GrpcServer() = default;

  std::string host_;
  int port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<HealthListener> health_listener_;  // null without health_listen
  absl::Duration drain_notice_;
  std::mutex health_mutex_;  // orders SetServing against the start of Drain
  bool drained_ = false;     // guarded by health_mutex_
};

// Call first thing in main(), before any thread starts: blocks SIGTERM and SIGINT in every
// thread so that WaitForTerminationSignal alone receives them.
void BlockTerminationSignals();

// Blocks the calling thread until the process receives SIGTERM or SIGINT.
void WaitForTerminationSignal();

}  // namespace tandem

#endif  // TANDEM_WIRE_GRPC_SERVER_H_
