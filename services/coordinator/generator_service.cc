#include "services/coordinator/generator_service.h"

#include "services/common/grpc_status.h"

namespace tandem {

grpc::Status GeneratorService::Generate(grpc::ServerContext* context,
                                        const v1::GenerateRequest* request,
                                        grpc::ServerWriter<v1::GenerateResponse>* writer) {
  const auto deadline = context->deadline();  // time_point::max() when the client set none
  return ToGrpcStatus(coordinator_->Generate(
      *request, [&](const v1::GenerateResponse& response) { return writer->Write(response); },
      [&] { return context->IsCancelled(); },
      deadline == std::chrono::system_clock::time_point::max() ? absl::InfiniteFuture()
                                                               : absl::FromChrono(deadline)));
}

grpc::Status GeneratorService::Tokenize(grpc::ServerContext*, const v1::TokenizeRequest* request,
                                        v1::TokenizeResponse* response) {
  absl::StatusOr<v1::TokenizeResponse> result = coordinator_->Tokenize(*request);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status GeneratorService::DescribeModel(grpc::ServerContext*, const v1::DescribeModelRequest*,
                                             v1::DescribeModelResponse* response) {
  *response = coordinator_->Describe();
  return grpc::Status::OK;
}

grpc::Status GeneratorService::CloseSession(grpc::ServerContext*,
                                            const v1::CloseSessionRequest* request,
                                            v1::CloseSessionResponse*) {
  return ToGrpcStatus(coordinator_->CloseSession(request->session_id()));
}

}  // namespace tandem
