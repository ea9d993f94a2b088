#include "services/coordinator/openai_api_reply.h"

#include <algorithm>
#include <utility>

#include "services/coordinator/openai_error_param.h"

namespace tandem {

OpenAiApiReply::OpenAiApiReply(OpenAiReply reply, OpenAiEndpoint endpoint, bool logprobs,
                               int32_t choices)
    : reply_(std::move(reply)),
      endpoint_(endpoint),
      logprobs_(logprobs),
      streamed_(static_cast<size_t>(std::max(1, choices))) {
  if (!logprobs) return;
  for (StreamedChoice& c : streamed_) c.logprobs.emplace(endpoint);
}

json::Value OpenAiApiReply::Logprobs(const CollectedReply& choice) const {
  // A fresh one per choice: each choice's text offsets count from its own start.
  return logprobs_ ? OpenAiLogprobs(endpoint_).Of(choice.logprobs) : json::Value();
}

std::string OpenAiApiReply::Complete(const CollectedReply& collected) {
  return reply_.Complete(collected.text, collected.reasoning, collected.result,
                         Logprobs(collected));
}

std::string OpenAiApiReply::CompleteChoices(const std::vector<CollectedReply>& choices) {
  if (choices.size() == 1) return Complete(choices.front());
  json::Array list;
  const v1::GenerationResult* usage = &choices.front().result;
  for (size_t i = 0; i < choices.size(); ++i) {
    const CollectedReply& c = choices[i];
    json::Object choice =
        reply_.Choice(static_cast<int32_t>(i), c.text, c.reasoning, c.result, Logprobs(c));
    // Each choice's own seed, speculation and timing (the reply's are choice 0's).
    choice.Set("tandem", TandemStatistics(c.result));
    list.emplace_back(std::move(choice));
    if (c.result.has_request_usage()) usage = &c.result;  // the last choice to end
  }
  return reply_.CompleteChoices(std::move(list), *usage, choices.front().result);
}

std::vector<std::string> OpenAiApiReply::Events(const v1::GenerateResponse& m) {
  std::vector<std::string> events;
  const int32_t index = m.choice_index();
  if (index < 0 || static_cast<size_t>(index) >= streamed_.size()) return events;
  StreamedChoice& choice = streamed_[index];
  if (reply_.chat() && !choice.role_sent) {
    choice.role_sent = true;
    events.push_back(SseEvent("", reply_.RoleChunk(index)));
  }
  // With logprobs, tokens whose text is held back (an unfinished character) still send theirs.
  const v1::TokenDelta& d = m.delta();
  const bool has_logprobs = choice.logprobs && d.logprobs_size() > 0;
  const bool has_parts = !d.reasoning_text().empty() || d.tool_calls_size() > 0;
  if (m.has_delta() && (!d.text().empty() || has_logprobs || has_parts)) {
    json::Value logprobs = choice.logprobs ? choice.logprobs->Of(d.logprobs()) : json::Value();
    events.push_back(SseEvent("", reply_.chat()
                                      ? reply_.DeltaChunk(d, std::move(logprobs), index)
                                      : reply_.TextChunk(d.text(), std::move(logprobs), index)));
  }
  if (m.has_final()) {
    events.push_back(SseEvent("", reply_.FinishChunk(m.final(), index)));
    if (index == 0) first_ = m.final();
    // The usage (the request's) once, after the last choice's finish, with choice 0's
    // speculation metrics (as a reply that is not streamed has them).
    if (++finished_ == static_cast<int32_t>(streamed_.size()) && reply_.include_usage()) {
      v1::GenerationResult usage = first_;
      if (m.final().has_request_usage()) {
        *usage.mutable_request_usage() = m.final().request_usage();
      }
      events.push_back(SseEvent("", reply_.UsageChunk(usage)));
    }
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
