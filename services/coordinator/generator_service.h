// tandem.v1.Generator: thin gRPC handlers over a Coordinator. Each Generate ends with one
// log line (request_log.h); errors reach the client without internal names (public_status.h).
//
// Thread-safe: gRPC calls the handlers on its own threads.
#ifndef TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_
#define TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_

#include "services/coordinator/coordinator.h"
#include "tandem/v1/generator.grpc.pb.h"

namespace tandem {

class GeneratorService final : public v1::Generator::Service {
 public:
  explicit GeneratorService(Coordinator* coordinator) : coordinator_(coordinator) {}

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status DescribeModel(grpc::ServerContext* context, const v1::DescribeModelRequest* request,
                             v1::DescribeModelResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext* context, const v1::CloseSessionRequest* request,
                            v1::CloseSessionResponse* response) override;

 private:
  grpc::Status Public(const absl::Status& status) const;

  Coordinator* coordinator_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_GENERATOR_SERVICE_H_
