#include "wire/health_listener.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/base/status_macros.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/ext/health_check_service_server_builder_option.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "wire/port_probe.h"

namespace tandem {
namespace {

// Drops the reflection plugins registered process-wide (v1alpha's and our v1, which the main
// ports serve), so that this port answers health and nothing else.
class NoReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return absl::StrContains(plugin->name(), "reflection");
                                  }),
                   plugins->end());
  }
};

}  // namespace

// grpc.health.v1.Health, served synchronously: gRPC's default health service needs another
// sync service beside it (which was reflection), or a completion queue of its own.
class HealthListener::Service : public grpc::health::v1::Health::Service {
 public:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;

  void Set(const std::string& service, bool serving) {
    absl::MutexLock lock(&mutex_);
    statuses_[service] = serving ? grpc::health::v1::HealthCheckResponse::SERVING
                                 : grpc::health::v1::HealthCheckResponse::NOT_SERVING;
  }
  void Stop() {
    absl::MutexLock lock(&mutex_);
    stopped_ = true;
  }

  grpc::Status Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override {
    absl::MutexLock lock(&mutex_);
    auto it = statuses_.find(request->service());
    if (it == statuses_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
    response->set_status(it->second);
    return grpc::Status::OK;
  }

  // The status now, then each change, until the client leaves or the port closes.
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override {
    std::optional<Status> sent;
    absl::MutexLock lock(&mutex_);
    while (!stopped_ && !context->IsCancelled()) {
      auto it = statuses_.find(request->service());
      const Status now = it == statuses_.end()
                             ? grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN
                             : it->second;
      if (sent != now) {
        grpc::health::v1::HealthCheckResponse response;
        response.set_status(now);
        mutex_.Unlock();
        const bool written = writer->Write(response);
        mutex_.Lock();
        if (!written) break;
        sent = now;
      }
      mutex_.AwaitWithTimeout(absl::Condition(&stopped_), absl::Milliseconds(100));
    }
    return grpc::Status::OK;
  }

 private:
  absl::Mutex mutex_;
  absl::flat_hash_map<std::string, Status> statuses_ ABSL_GUARDED_BY(mutex_);
  bool stopped_ ABSL_GUARDED_BY(mutex_) = false;
};

HealthListener::HealthListener() : service_(std::make_unique<Service>()) {}

HealthListener::~HealthListener() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<HealthListener>> HealthListener::Start(const std::string& listen) {
  if (listen.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("health address '", listen, "' is not HOST:PORT"));
  }
  RETURN_IF_ERROR(CheckPortFree(listen));
  std::unique_ptr<HealthListener> listener(new HealthListener());
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a busy port fails, as elsewhere
  builder.SetOption(std::make_unique<NoReflection>());
  // Our own health service, not gRPC's default one (enabled process-wide by GrpcServer).
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  builder.RegisterService(listener->service_.get());
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
  service_->Set(service, serving);
}

void HealthListener::Shutdown(absl::Duration timeout) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  service_->Stop();  // ends the Watch streams, so that Shutdown need not cancel them
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::microseconds(absl::ToInt64Microseconds(timeout)));
  server_->Wait();
}

}  // namespace tandem
