#include "services/coordinator/generator_service.h"

#include "services/coordinator/public_status.h"
#include "services/coordinator/request_log.h"
#include "wire/grpc_status.h"

namespace tandem {

// The one place where the coordinator's errors leave for a public client: internal names
// (worker addresses, model paths) are replaced; the log keeps the full message.
grpc::Status GeneratorService::Public(const absl::Status& status) const {
  return ToGrpcStatus(PublicStatus(status, coordinator_->Redactions()));
}

grpc::Status GeneratorService::Authenticate(const grpc::ServerContext* context) const {
  if (keys_ == nullptr) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find("authorization");
  const absl::string_view header =
      found == metadata.end() ? absl::string_view()
                              : absl::string_view(found->second.data(), found->second.size());
  return ToGrpcStatus(keys_->Check(header));
}

grpc::Status GeneratorService::Generate(grpc::ServerContext* context,
                                        const v1::GenerateRequest* request,
                                        grpc::ServerWriter<v1::GenerateResponse>* writer) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  RequestLog log(*request);
  const auto deadline = context->deadline();  // time_point::max() when the client set none
  const absl::Status status = coordinator_->Generate(
      *request,
      [&](const v1::GenerateResponse& response) {
        log.Saw(response);
        return writer->Write(response);
      },
      [&] { return context->IsCancelled(); },
      deadline == std::chrono::system_clock::time_point::max() ? absl::InfiniteFuture()
                                                               : absl::FromChrono(deadline));
  log.Done(status);
  return Public(status);
}

grpc::Status GeneratorService::Tokenize(grpc::ServerContext* context,
                                        const v1::TokenizeRequest* request,
                                        v1::TokenizeResponse* response) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  absl::StatusOr<v1::TokenizeResponse> result = coordinator_->Tokenize(*request);
  if (!result.ok()) return Public(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

// --- #30 front ---
grpc::Status GeneratorService::Detokenize(grpc::ServerContext* context,
                                          const v1::DetokenizeRequest* request,
                                          v1::DetokenizeResponse* response) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  absl::StatusOr<v1::DetokenizeResponse> result = coordinator_->Detokenize(*request);
  if (!result.ok()) return Public(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}
// --- end ---

grpc::Status GeneratorService::DescribeModel(grpc::ServerContext* context,
                                             const v1::DescribeModelRequest*,
                                             v1::DescribeModelResponse* response) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  *response = coordinator_->Describe();
  return grpc::Status::OK;
}

grpc::Status GeneratorService::CloseSession(grpc::ServerContext* context,
                                            const v1::CloseSessionRequest* request,
                                            v1::CloseSessionResponse*) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  return Public(coordinator_->CloseSession(request->session_id()));
}

}  // namespace tandem
