// libFuzzer target for Anthropic's Messages API request conversion: each input is a request
// body (any bytes), converted as POST /v1/messages and as /v1/messages/count_tokens
// (anthropic_request.h), then checked against the coordinator's request limits and, when
// refused, turned into the Anthropic-shaped error the client would get.
// Properties: the conversion ends OK or kInvalidArgument; an OK request names a model, has a
// chat with a message, max_tokens >= 1 for /v1/messages, survives a protobuf round trip (its
// strings are valid UTF-8, as gRPC requires), and its reply (a made-up result) is JSON;
// every error body is JSON with a message of at most 1024 bytes. Nothing may crash, hang or
// exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "services/coordinator/anthropic_request.h"
#include "services/coordinator/anthropic_response.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/request_limits.h"

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
  TANDEM_FUZZ_ASSERT(json::Parse(AnthropicErrorBody(error)).ok(), "error body is not JSON: %s",
                     AnthropicErrorBody(error).c_str());
}

void CheckOne(absl::string_view body, AnthropicEndpoint endpoint) {
  absl::StatusOr<AnthropicRequest> request = ParseAnthropicRequest(body, endpoint);
  if (!request.ok()) {
    TANDEM_FUZZ_ASSERT(absl::IsInvalidArgument(request.status()), "unexpected %s",
                       request.status().ToString().c_str());
    CheckError(request.status(), ErrorOrigin::kRequest);
    return;
  }
  const v1::GenerateRequest& g = request->generate;
  TANDEM_FUZZ_ASSERT(!request->model.empty(), "no model");
  TANDEM_FUZZ_ASSERT(g.has_chat(), "no chat");
  TANDEM_FUZZ_ASSERT(endpoint == AnthropicEndpoint::kCountTokens || g.max_tokens() >= 1,
                     "max_tokens %d", g.max_tokens());
  std::string wire;
  TANDEM_FUZZ_ASSERT(g.SerializeToString(&wire), "does not serialise");
  v1::GenerateRequest back;
  TANDEM_FUZZ_ASSERT(back.ParseFromString(wire), "does not parse back (invalid UTF-8?)");
  RequestLimits limits;
  limits.max_prompt_bytes = 4096;
  if (absl::Status s = CheckGenerateLimits(g, limits); !s.ok()) {
    CheckError(s, ErrorOrigin::kRequestLimit);
  }
  v1::GenerationResult result;
  result.set_finish_reason(v1::FINISH_REASON_STOP_STRING);
  AnthropicReply reply("msg_1", request->model, {g.stop_strings().begin(), g.stop_strings().end()});
  const std::string complete = reply.Complete(Collected("text", "", result));
  TANDEM_FUZZ_ASSERT(json::Parse(complete).ok(), "reply is not JSON: %s", complete.c_str());
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  tandem::CheckOne(body, tandem::AnthropicEndpoint::kMessages);
  tandem::CheckOne(body, tandem::AnthropicEndpoint::kCountTokens);
  return 0;
}
