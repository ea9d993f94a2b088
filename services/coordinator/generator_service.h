// tandem.v1.Generator: thin gRPC handlers over a Coordinator. Each Generate ends with one
// log line (request_log.h); errors reach the client without internal names (public_status.h).
// With API keys (--api-keys-file), every call must carry `authorization: Bearer KEY`
// metadata, or it is UNAUTHENTICATED before any work (health and reflection stay open).
//
// Thread-safe: gRPC calls the handlers on its own threads.
#ifndef TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_
#define TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_

#include "services/coordinator/api_keys.h"
#include "services/coordinator/coordinator.h"
#include "tandem/v1/generator.grpc.pb.h"

namespace tandem {

class GeneratorService final : public v1::Generator::Service {
 public:
  // `keys` (may be null: no authentication) must outlive the service.
  explicit GeneratorService(Coordinator* coordinator, const ApiKeys* keys = nullptr)
      : coordinator_(coordinator), keys_(keys) {}

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status DescribeModel(grpc::ServerContext* context, const v1::DescribeModelRequest* request,
                             v1::DescribeModelResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext* context, const v1::CloseSessionRequest* request,
                            v1::CloseSessionResponse* response) override;
  // #30 front
  grpc::Status Detokenize(grpc::ServerContext* context, const v1::DetokenizeRequest* request,
                          v1::DetokenizeResponse* response) override;
  // --- #30 embeddings ---
  // Defined in generator_embed_rpc.cc.
  grpc::Status Embed(grpc::ServerContext* context, const v1::EmbedRequest* request,
                     v1::EmbedResponse* response) override;
  // --- end ---

 private:
  grpc::Status Public(const absl::Status& status) const;
  // OK, or UNAUTHENTICATED when keys are required and the call's metadata has no valid one.
  grpc::Status Authenticate(const grpc::ServerContext* context) const;

  Coordinator* coordinator_;
  const ApiKeys* keys_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_
