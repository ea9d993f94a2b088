#include "wire/grpc_server.h"

#include <signal.h>

#include <chrono>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "core/base/status_macros.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "wire/port_probe.h"
#include "wire/reflection_v1.h"

namespace tandem {
namespace {

std::string HostOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  return std::string(colon == absl::string_view::npos ? address : address.substr(0, colon));
}

// prometheus-cpp's Exposer reports a failed bind (civetweb) by throwing: the one place where
// an exception is caught and becomes a status.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartExposer(const std::string& address) {
  try {
    return std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve /metrics on ", address,
                                               " (address in use or invalid?): ", e.what()));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(
    const GrpcServerOptions& options, const std::vector<grpc::Service*>& services,
    std::shared_ptr<prometheus::Registry> registry) {
  if (options.listen.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", options.listen, "' is not HOST:PORT"));
  }
  RETURN_IF_ERROR(CheckPortFree(options.listen));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();  // grpc.reflection.v1alpha
  // gRPC's health service is written without protobuf: naming a generated health message
  // links health.pb.cc, whose file descriptor then lets reflection describe the service.
  grpc::health::v1::HealthCheckRequest::descriptor();
  std::unique_ptr<GrpcServer> server(new GrpcServer());
  server->host_ = HostOf(options.listen);
  server->drain_notice_ = options.drain_notice;
  grpc::ServerBuilder builder;
  // gRPC turns SO_REUSEPORT on by default: a second process on a busy port would then bind
  // too and take a share of the connections. Off, the bind fails and we say so.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(
      options.listen,
      options.credentials != nullptr ? options.credentials : grpc::InsecureServerCredentials(),
      &server->port_);
  AddReflectionV1(&builder);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Clients (the coordinator) send keepalive pings to find peers that stopped answering, also
  // on idle connections; without this the server answers them with GOAWAY "too_many_pings".
  // Half the shortest client interval (the coordinator's --keepalive-seconds >= 1) as margin.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, " (address in use or invalid?)"));
  }
  if (!options.health_listen.empty()) {
    ASSIGN_OR_RETURN(server->health_listener_, HealthListener::Start(options.health_listen));
    server->health_listener_->SetServingStatus(kLivenessService, true);
  }
  server->SetServing(false);
  if (grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService()) {
    health->SetServingStatus(kLivenessService, true);
  }
  if (!options.metrics_listen.empty()) {
    // civetweb reports a failed bind by throwing; check the address shape first.
    if (options.metrics_listen.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics address '", options.metrics_listen, "' is not HOST:PORT"));
    }
    ASSIGN_OR_RETURN(server->exposer_, StartExposer(options.metrics_listen));
    server->exposer_->RegisterCollectable(registry);
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    server->metrics_port_ = ports.empty() ? 0 : ports[0];
  }
  return server;
}

GrpcServer::~GrpcServer() {
  drain_notice_ = absl::ZeroDuration();  // nobody is watching a server being destroyed
  Drain(absl::ZeroDuration());
}

std::string GrpcServer::address() const { return absl::StrCat(host_, ":", port_); }

int GrpcServer::health_port() const {
  return health_listener_ == nullptr ? 0 : health_listener_->port();
}

void GrpcServer::SetServing(bool serving) {
  std::lock_guard<std::mutex> lock(health_mutex_);
  if (server_ == nullptr || drained_) return;
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->SetServingStatus("", serving);
  }
  if (health_listener_ != nullptr) health_listener_->SetServingStatus("", serving);
}

void GrpcServer::Drain(absl::Duration timeout) {
  {
    std::lock_guard<std::mutex> lock(health_mutex_);
    if (drained_ || server_ == nullptr) return;
    if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
      health->SetServingStatus("", false);
    }
    if (health_listener_ != nullptr) health_listener_->SetServingStatus("", false);
    drained_ = true;
  }
  if (drain_notice_ > absl::ZeroDuration()) absl::SleepFor(drain_notice_);
  if (health_listener_ != nullptr) health_listener_->Shutdown(absl::ZeroDuration());
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::microseconds(absl::ToInt64Microseconds(timeout)));
  server_->Wait();
}

namespace {

sigset_t TerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

void BlockTerminationSignals() {
  const sigset_t signals = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void WaitForTerminationSignal() {
  const sigset_t signals = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int received = 0;
  sigwait(&signals, &received);
}

}  // namespace tandem
