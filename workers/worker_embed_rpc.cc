// Worker.Embed (worker.proto): converts the request, runs WorkerEngine::Embed, converts back.
#include <chrono>
#include <vector>

#include "core/decoder/embedding.h"
#include "wire/grpc_status.h"
#include "workers/worker_service.h"

namespace tandem {
namespace {

v1::EmbedPooling PoolingToProto(Pooling pooling) {
  return pooling == Pooling::kLast ? v1::EMBED_POOLING_LAST : v1::EMBED_POOLING_MEAN;
}

}  // namespace

grpc::Status WorkerService::Embed(grpc::ServerContext* context,
                                  const v1::EmbedTokensRequest* request,
                                  v1::EmbedTokensResponse* response) {
  WorkerEngine* engine = engine_.load();
  if (engine == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is loading its model");
  }
  Pooling pooling = engine->options().pooling;
  switch (request->pooling()) {
    case v1::EMBED_POOLING_UNSPECIFIED:
      break;
    case v1::EMBED_POOLING_MEAN:
      pooling = Pooling::kMean;
      break;
    case v1::EMBED_POOLING_LAST:
      pooling = Pooling::kLast;
      break;
    default:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "embed: unknown pooling " + std::to_string(request->pooling()));
  }
  std::vector<std::vector<int32_t>> inputs;
  inputs.reserve(request->inputs_size());
  for (const v1::TokenIds& input : request->inputs()) {
    inputs.emplace_back(input.ids().begin(), input.ids().end());
  }
  const auto cancelled = [context] {
    return context->IsCancelled() || std::chrono::system_clock::now() > context->deadline();
  };
  absl::StatusOr<EmbedOutput> out = engine->Embed(inputs, pooling, cancelled);
  if (!out.ok()) return ToGrpcStatus(out.status());
  for (size_t i = 0; i < out->embeddings.size(); ++i) {
    v1::Embedding* embedding = response->add_embeddings();
    embedding->set_index(static_cast<int32_t>(i));
    embedding->set_token_count(static_cast<int32_t>(inputs[i].size()));
    embedding->mutable_values()->Add(out->embeddings[i].begin(), out->embeddings[i].end());
  }
  response->set_pooling(PoolingToProto(pooling));
  response->set_queue_seconds(out->queue_seconds);
  response->set_compute_seconds(out->compute_seconds);
  return grpc::Status::OK;
}

}  // namespace tandem
