// libFuzzer target for the OpenAI-compatible HTTP API's request conversion: each input is a
// request body (any bytes), converted as /v1/chat/completions and as /v1/completions
// (openai_request.h), then checked against the coordinator's request limits and, when
// refused, turned into the HTTP error the client would get (http_error.h).
// Properties: the conversion ends OK or kInvalidArgument; an OK request names a model, sets
// a prompt, has max_tokens >= 0, survives a protobuf round trip (its strings are valid UTF-8,
// as gRPC requires), has include_usage only with stream and at most one constraint, set when
// sent (a schema that is a JSON object, a grammar not empty); every error
// body is JSON with a message of at most 1024 bytes. Nothing may crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "services/coordinator/choices.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/openai_error_param.h"
#include "services/coordinator/openai_fields.h"
#include "services/coordinator/openai_request.h"
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

void CheckOne(absl::string_view body, OpenAiEndpoint endpoint) {
  absl::StatusOr<OpenAiRequest> request = ParseOpenAiRequest(body, endpoint);
  if (!request.ok()) {
    TANDEM_FUZZ_ASSERT(absl::IsInvalidArgument(request.status()), "unexpected %s",
                       request.status().ToString().c_str());
    CheckError(request.status(), ErrorOrigin::kRequest);
    return;
  }
  const v1::GenerateRequest& g = request->generate;
  TANDEM_FUZZ_ASSERT(!request->model.empty(), "no model");
  TANDEM_FUZZ_ASSERT(g.prompt_case() != v1::GenerateRequest::PROMPT_NOT_SET, "no prompt");
  TANDEM_FUZZ_ASSERT(g.max_tokens() >= 0, "max_tokens %d", g.max_tokens());
  TANDEM_FUZZ_ASSERT(request->stream || !request->include_usage, "include_usage without stream");
  TANDEM_FUZZ_ASSERT(endpoint == OpenAiEndpoint::kCompletions || g.has_chat(), "chat lost");
  TANDEM_FUZZ_ASSERT(
      !g.has_constraint() || g.constraint().kind_case() != v1::Constraint::KIND_NOT_SET,
      "an empty constraint was sent");
  if (g.constraint().has_json_schema()) {
    absl::StatusOr<json::Value> schema = json::Parse(g.constraint().json_schema().schema());
    TANDEM_FUZZ_ASSERT(schema.ok() && schema->is_object(), "the schema is not a JSON object: %s",
                       g.constraint().json_schema().schema().c_str());
  }
  TANDEM_FUZZ_ASSERT(!g.constraint().has_grammar() || !g.constraint().grammar().empty(),
                     "an empty grammar");
  std::string wire;
  TANDEM_FUZZ_ASSERT(g.SerializeToString(&wire), "does not serialise");
  v1::GenerateRequest back;
  TANDEM_FUZZ_ASSERT(back.ParseFromString(wire), "does not parse back (invalid UTF-8?)");
  RequestLimits limits;
  limits.max_prompt_bytes = 4096;
  if (absl::Status s = CheckGenerateLimits(g, limits); !s.ok()) {
    CheckError(s, ErrorOrigin::kRequestLimit);
  }
  // --- #30 n choices --- (the parser takes n >= 1; the coordinator bounds it)
  TANDEM_FUZZ_ASSERT(g.n() >= 0, "n %d", g.n());
  if (absl::Status s = CheckChoices(g, limits); !s.ok()) {
    s = WithOpenAiParam(s, *request);
    TANDEM_FUZZ_ASSERT(openai::ErrorParam(s).value_or("") == "n", "n's refusal names %s",
                       openai::ErrorParam(s).value_or("nothing").c_str());
    CheckError(s, ErrorOrigin::kRequest);
  }
  // --- end ---
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  tandem::CheckOne(body, tandem::OpenAiEndpoint::kChatCompletions);
  tandem::CheckOne(body, tandem::OpenAiEndpoint::kCompletions);
  return 0;
}
