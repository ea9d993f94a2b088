#include "wire/health_listener.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "wire/port_probe.h"

namespace tandem {

absl::StatusOr<std::unique_ptr<HealthListener>> HealthListener::Start(const std::string& listen) {
  if (listen.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("health address '", listen, "' is not HOST:PORT"));
  }
  RETURN_IF_ERROR(CheckPortFree(listen));
  grpc::EnableDefaultHealthCheckService(true);  // the only service of this server
  std::unique_ptr<HealthListener> listener(new HealthListener());
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a busy port fails, as elsewhere
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &listener->port_);
  listener->server_ = builder.BuildAndStart();
  if (listener->server_ == nullptr || listener->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve health on ", listen, " (address in use or invalid?)"));
  }
  listener->SetServingStatus("", false);
  return listener;
}

void HealthListener::SetServingStatus(const std::string& service, bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(service, serving);
  }
}

void HealthListener::Shutdown(absl::Duration timeout) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::microseconds(absl::ToInt64Microseconds(timeout)));
  server_->Wait();
}

}  // namespace tandem
