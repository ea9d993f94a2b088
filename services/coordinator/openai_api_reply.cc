#include "services/coordinator/openai_api_reply.h"

#include <utility>

#include "services/coordinator/openai_error_param.h"

namespace tandem {

OpenAiApiReply::OpenAiApiReply(OpenAiReply reply, OpenAiEndpoint endpoint, bool logprobs)
    : reply_(std::move(reply)) {
  if (logprobs) logprobs_.emplace(endpoint);
}

std::string OpenAiApiReply::Complete(const CollectedReply& collected) {
  json::Value logprobs;
  if (logprobs_) logprobs = logprobs_->Of(collected.logprobs);
  return reply_.Complete(collected.text, collected.reasoning, collected.result,
                         std::move(logprobs));
}

std::vector<std::string> OpenAiApiReply::Events(const v1::GenerateResponse& m) {
  std::vector<std::string> events;
  if (reply_.chat() && !role_sent_) {
    role_sent_ = true;
    events.push_back(SseEvent("", reply_.RoleChunk()));
  }
  // With logprobs, tokens whose text is held back (an unfinished character) still send theirs.
  const v1::TokenDelta& d = m.delta();
  const bool has_logprobs = logprobs_ && d.logprobs_size() > 0;
  const bool has_parts = !d.reasoning_text().empty() || d.tool_calls_size() > 0;
  if (m.has_delta() && (!d.text().empty() || has_logprobs || has_parts)) {
    json::Value chunk_logprobs = logprobs_ ? logprobs_->Of(d.logprobs()) : json::Value();
    events.push_back(SseEvent("", reply_.chat()
                                      ? reply_.DeltaChunk(d, std::move(chunk_logprobs))
                                      : reply_.TextChunk(d.text(), std::move(chunk_logprobs))));
  }
  if (m.has_final()) {
    events.push_back(SseEvent("", reply_.FinishChunk(m.final())));
    if (reply_.include_usage()) events.push_back(SseEvent("", reply_.UsageChunk(m.final())));
  }
  return events;
}

std::string OpenAiApiReply::StreamEnd() { return SseEvent("", "[DONE]"); }

std::string OpenAiApiReply::StreamError(const HttpError& error) {
  return SseEvent("", HttpErrorBody(error));
}

std::string OpenAiApiReply::ErrorBody(const HttpError& error) const { return HttpErrorBody(error); }

absl::Status OpenAiApiReply::ForClient(absl::Status status) const {
  return request_.has_value() ? WithOpenAiParam(std::move(status), *request_) : status;
}

}  // namespace tandem
