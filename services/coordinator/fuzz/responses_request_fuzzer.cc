// libFuzzer target for OpenAI's Responses API request conversion: each input is a request
// body (any bytes), converted as POST /v1/responses (responses_request.h), then checked
// against the coordinator's request limits and, when refused, turned into the HTTP error the
// client would get.
// Properties: the conversion ends OK or kInvalidArgument; an OK request names a model, has a
// chat, at most one constraint, set when sent (a schema that is a JSON object), survives a
// protobuf round trip (its strings are valid UTF-8, as gRPC requires), and its response
// object (echoing the request's fields; a made-up result) is JSON; every error body is JSON
// with a message of at most 1024 bytes. Nothing may crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/request_limits.h"
#include "services/coordinator/responses_request.h"
#include "services/coordinator/responses_response.h"

namespace tandem {
namespace {

// A reply of `text`, `reasoning` and `result` (no logprobs).
CollectedReply Collected(std::string text, std::string reasoning, v1::GenerationResult result) {
  CollectedReply reply;
  reply.text = std::move(text);
  reply.reasoning = std::move(reasoning);
  reply.result = std::move(result);
  return reply;
}

void CheckError(const absl::Status& status, ErrorOrigin origin) {
  const HttpError error = ToHttpError(status, origin);
  TANDEM_FUZZ_ASSERT(error.status >= 400 && error.message.size() <= 1024, "status %d, %zu bytes",
                     error.status, error.message.size());
  TANDEM_FUZZ_ASSERT(json::Parse(HttpErrorBody(error)).ok(), "error body is not JSON: %s",
                     HttpErrorBody(error).c_str());
}

void CheckOne(absl::string_view body) {
  absl::StatusOr<ResponsesRequest> request = ParseResponsesRequest(body);
  if (!request.ok()) {
    TANDEM_FUZZ_ASSERT(absl::IsInvalidArgument(request.status()), "unexpected %s",
                       request.status().ToString().c_str());
    CheckError(request.status(), ErrorOrigin::kRequest);
    return;
  }
  const v1::GenerateRequest& g = request->generate;
  TANDEM_FUZZ_ASSERT(!request->model.empty(), "no model");
  TANDEM_FUZZ_ASSERT(g.has_chat(), "no chat");
  TANDEM_FUZZ_ASSERT(
      !g.has_constraint() || g.constraint().kind_case() != v1::Constraint::KIND_NOT_SET,
      "an empty constraint was sent");
  if (g.constraint().has_json_schema()) {
    absl::StatusOr<json::Value> schema = json::Parse(g.constraint().json_schema().schema());
    TANDEM_FUZZ_ASSERT(schema.ok() && schema->is_object(), "the schema is not a JSON object: %s",
                       g.constraint().json_schema().schema().c_str());
  }
  std::string wire;
  TANDEM_FUZZ_ASSERT(g.SerializeToString(&wire), "does not serialise");
  v1::GenerateRequest back;
  TANDEM_FUZZ_ASSERT(back.ParseFromString(wire), "does not parse back (invalid UTF-8?)");
  RequestLimits limits;
  limits.max_prompt_bytes = 4096;
  if (absl::Status s = CheckGenerateLimits(g, limits); !s.ok()) {
    CheckError(s, ErrorOrigin::kRequestLimit);
  }
  ResponsesReply reply("resp_1", 0, request->model, *request);
  const std::string complete = reply.Complete(Collected("text", "", v1::GenerationResult()));
  TANDEM_FUZZ_ASSERT(json::Parse(complete).ok(), "response is not JSON: %s", complete.c_str());
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::CheckOne(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
