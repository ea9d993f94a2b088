// A second gRPC port that serves only grpc.health.v1, in plaintext: for health checkers that
// cannot speak TLS (the kubelet's gRPC probes, for one) when the main port requires TLS or a
// client certificate. It tells only what health tells anyway (SERVING or not); the services
// themselves are never reachable on it. GrpcServer runs one when asked (--health-listen) and
// keeps its statuses equal to its own.
//
// Thread-compatible: GrpcServer calls it under its health lock.
#ifndef TANDEM_WIRE_HEALTH_LISTENER_H_
#define TANDEM_WIRE_HEALTH_LISTENER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"

namespace tandem {

class HealthListener {
 public:
  // kInvalidArgument (not HOST:PORT) / kUnavailable (busy, cannot bind) naming the address.
  static absl::StatusOr<std::unique_ptr<HealthListener>> Start(const std::string& listen);
  ~HealthListener();

  int port() const { return port_; }
  void SetServingStatus(const std::string& service, bool serving);
  // Closes the port (health checks then fail to connect). Idempotent.
  void Shutdown(absl::Duration timeout);

 private:
  class Service;
  HealthListener();

  std::unique_ptr<Service> service_;  // outlives server_
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace tandem

#endif  // TANDEM_WIRE_HEALTH_LISTENER_H_
