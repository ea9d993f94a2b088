// POST /v1/embeddings in OpenAI's shape, without HTTP: the body becomes a
// tandem.v1.EmbedRequest, and an EmbedResponse becomes OpenAI's list of embeddings.
//
//   {"model": "stories260K", "input": "Once upon a time", "encoding_format": "float"}
//   -> {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [...]}],
//       "model": "stories260K", "usage": {"prompt_tokens": 5, "total_tokens": 5}}
//
// `input`: a string, an array of strings, an array of token ids (one input), or an array of
// arrays of token ids; never empty. `encoding_format`: "float" (default: JSON numbers) or
// "base64" (each vector's float32 values as little-endian bytes, base64). `dimensions`: only
// the model's own width (checked against the vectors). `user`: ignored. `pooling` ("mean" or
// "last"): Tandem's own, the worker's --pooling when absent. Anything else is refused,
// naming the field (error.param).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_EMBEDDINGS_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_EMBEDDINGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/request_limits.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct EmbeddingsRequest {
  v1::EmbedRequest embed;
  std::string model;
  bool base64 = false;
  std::optional<int64_t> dimensions;
};

// kInvalidArgument naming the field (openai_fields.h) for a body that is not such a request.
absl::StatusOr<EmbeddingsRequest> ParseEmbeddingsRequest(absl::string_view body);

// Refuses `dimensions` unless it is the width of the vectors; then the JSON body.
absl::StatusOr<std::string> EmbeddingsResponseJson(const EmbeddingsRequest& request,
                                                   const v1::EmbedResponse& response);

// The whole route: parse, check the model (kNotFound) and the limits (origin kRequestLimit),
// `embed`, then the body. `status` is OK with `body` set, or the error and its origin.
struct EmbeddingsOutcome {
  absl::Status status;
  ErrorOrigin origin = ErrorOrigin::kRequest;
  std::string body;
};
EmbeddingsOutcome ServeEmbeddings(
    absl::string_view body, const std::string& model, const RequestLimits& limits,
    const std::function<absl::StatusOr<v1::EmbedResponse>(const v1::EmbedRequest&)>& embed);
// The same for a server known by several names (--served-model-name): `model` may be any.
EmbeddingsOutcome ServeEmbeddings(
    absl::string_view body, const std::vector<std::string>& names, const RequestLimits& limits,
    const std::function<absl::StatusOr<v1::EmbedResponse>(const v1::EmbedRequest&)>& embed);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_EMBEDDINGS_H_
