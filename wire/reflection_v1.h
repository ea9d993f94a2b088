// grpc.reflection.v1.ServerReflection over the generated descriptor pool, served beside
// gRPC's own grpc.reflection.v1alpha (Debian's gRPC 1.51 ships only the latter; grpcurl and
// grpc-js try v1 first). Answers list_services with the server's registered services and
// file_by_filename / file_containing_symbol / file_containing_extension /
// all_extension_numbers_of_type from DescriptorPool::generated_pool(), each file sent once
// per stream together with the files it imports.
//
// AddReflectionV1(&builder) before BuildAndStart registers the service and, once the server
// is built, hands it the server's service list (a ServerBuilderPlugin, as gRPC's own
// reflection does). Thread-safe: each stream runs on its own RPC thread; the list is set
// once before the first call.
#ifndef TANDEM_WIRE_REFLECTION_V1_H_
#define TANDEM_WIRE_REFLECTION_V1_H_

#include "grpcpp/server_builder.h"

namespace tandem {

void AddReflectionV1(grpc::ServerBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_WIRE_REFLECTION_V1_H_
