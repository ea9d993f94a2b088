// libFuzzer target for POST /v1/embeddings' request conversion (openai_embeddings.h): each
// input is a request body (any bytes), parsed, checked against the request limits, and
// answered by a fake embed with one vector per input, float and base64.
// Properties: the conversion ends OK or kInvalidArgument; an OK request names a model and has
// at least one input, each a non-empty text or non-empty non-negative token ids, and survives
// a protobuf round trip (valid UTF-8); the answer is JSON with one embedding per input; every
// error body is JSON with a message of at most 1024 bytes. Nothing may crash, hang or exhaust
// memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/openai_embeddings.h"
#include "services/coordinator/request_limits.h"

namespace tandem {
namespace {

void CheckError(const absl::Status& status, ErrorOrigin origin) {
  const HttpError error = ToHttpError(status, origin);
  TANDEM_FUZZ_ASSERT(error.status >= 400 && error.message.size() <= 1024, "status %d, %zu bytes",
                     error.status, error.message.size());
  TANDEM_FUZZ_ASSERT(json::Parse(HttpErrorBody(error)).ok(), "error body is not JSON: %s",
                     HttpErrorBody(error).c_str());
}

void CheckRequest(const EmbeddingsRequest& r) {
  TANDEM_FUZZ_ASSERT(!r.model.empty(), "no model");
  TANDEM_FUZZ_ASSERT(r.embed.inputs_size() > 0, "no inputs");
  for (const v1::EmbedInput& input : r.embed.inputs()) {
    if (input.has_text()) {
      TANDEM_FUZZ_ASSERT(!input.text().empty(), "an empty text");
    } else {
      TANDEM_FUZZ_ASSERT(input.has_token_ids() && input.token_ids().ids_size() > 0, "no ids");
      for (int32_t id : input.token_ids().ids()) TANDEM_FUZZ_ASSERT(id >= 0, "id %d", id);
    }
  }
  std::string wire;
  TANDEM_FUZZ_ASSERT(r.embed.SerializeToString(&wire), "does not serialise");
  v1::EmbedRequest back;
  TANDEM_FUZZ_ASSERT(back.ParseFromString(wire), "does not parse back (invalid UTF-8?)");
}

// One unit vector of width 4 per input.
absl::StatusOr<v1::EmbedResponse> FakeEmbed(const v1::EmbedRequest& request) {
  v1::EmbedResponse response;
  response.set_model("m");
  for (int i = 0; i < request.inputs_size(); ++i) {
    v1::Embedding* e = response.add_embeddings();
    e->set_index(i);
    for (float v : {0.5f, -0.5f, 0.5f, -0.5f}) e->add_values(v);
  }
  response.set_prompt_tokens(request.inputs_size());
  return response;
}

void CheckOne(absl::string_view body, bool base64) {
  absl::StatusOr<EmbeddingsRequest> request = ParseEmbeddingsRequest(body);
  if (!request.ok()) {
    TANDEM_FUZZ_ASSERT(absl::IsInvalidArgument(request.status()), "unexpected %s",
                       request.status().ToString().c_str());
    CheckError(request.status(), ErrorOrigin::kRequest);
    return;
  }
  CheckRequest(*request);
  RequestLimits limits;
  limits.max_prompt_bytes = 1024;
  limits.max_embed_inputs = 16;
  limits.max_embed_tokens = 64;
  const EmbeddingsOutcome out = ServeEmbeddings(body, request->model, limits, FakeEmbed);
  if (!out.status.ok()) {
    CheckError(out.status, out.origin);
    return;
  }
  absl::StatusOr<json::Value> answer = json::Parse(out.body);
  TANDEM_FUZZ_ASSERT(answer.ok() && answer->is_object(), "the answer is not JSON: %s",
                     out.body.c_str());
  const json::Value* data = answer->as_object().Find("data");
  TANDEM_FUZZ_ASSERT(data != nullptr && data->is_array() &&
                         static_cast<int>(data->as_array().size()) == request->embed.inputs_size(),
                     "not one embedding per input");
  (void)base64;
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  tandem::CheckOne(body, false);
  return 0;
}
