// Generator.Embed (generator.proto): a thin handler over Coordinator::Embed.
#include <chrono>

#include "services/coordinator/generator_service.h"

namespace tandem {

grpc::Status GeneratorService::Embed(grpc::ServerContext* context, const v1::EmbedRequest* request,
                                     v1::EmbedResponse* response) {
  if (grpc::Status denied = Authenticate(context); !denied.ok()) return denied;
  const auto deadline = context->deadline();  // time_point::max() when the client set none
  absl::StatusOr<v1::EmbedResponse> result = coordinator_->Embed(
      *request, deadline == std::chrono::system_clock::time_point::max()
                    ? absl::InfiniteFuture()
                    : absl::FromChrono(deadline));
  if (!result.ok()) return Public(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace tandem
