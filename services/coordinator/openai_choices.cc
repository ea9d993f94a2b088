#include "services/coordinator/openai_choices.h"

#include <algorithm>
#include <utility>

#include "services/coordinator/openai_fields.h"

namespace tandem {

absl::Status OpenAiChoicesParam(const absl::Status& status) {
  if (status.ok()) return status;
  // openai::Invalid attaches the param; the message stays the coordinator's own.
  const absl::Status with_param = openai::Invalid("n", "");
  absl::Status out(status.code(), status.message());
  with_param.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

OpenAiChoices::OpenAiChoices(OpenAiEndpoint endpoint, int32_t n, bool logprobs)
    : endpoint_(endpoint), logprobs_(logprobs), choices_(static_cast<size_t>(std::max(1, n))) {}

void OpenAiChoices::Add(const v1::GenerateResponse& message) {
  const int32_t index = message.choice_index();
  if (index < 0 || index >= static_cast<int32_t>(choices_.size())) return;
  Choice& choice = choices_[index];
  if (message.has_delta()) {
    choice.text += message.delta().text();
    choice.reasoning += message.delta().reasoning_text();
    for (const v1::TokenLogprobs& l : message.delta().logprobs()) *choice.logprobs.Add() = l;
  }
  if (message.has_final()) {
    choice.result = message.final();
    if (index == 0 || message.final().has_request_usage()) usage_ = message.final();
  }
}

std::string OpenAiChoices::Reply(const OpenAiReply& reply) const {
  json::Array choices;
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    json::Value logprobs;
    if (logprobs_) logprobs = OpenAiLogprobs(endpoint_).Of(c.logprobs);
    json::Object choice =
        reply.Choice(static_cast<int32_t>(i), c.text, c.reasoning, c.result, std::move(logprobs));
    // Each choice's own seed, speculation and timing (the reply's are choice 0's).
    if (choices_.size() > 1) choice.Set("tandem", TandemStatistics(c.result));
    choices.emplace_back(std::move(choice));
  }
  return reply.CompleteChoices(std::move(choices), usage_, choices_[0].result);
}

OpenAiStreamEvents::OpenAiStreamEvents(const OpenAiReply& reply, int32_t n, bool logprobs)
    : reply_(reply), choices_(static_cast<size_t>(std::max(1, n))) {
  if (!logprobs) return;
  for (Choice& c : choices_)
    c.logprobs.emplace(reply.chat() ? OpenAiEndpoint::kChatCompletions
                                    : OpenAiEndpoint::kCompletions);
}

std::vector<std::string> OpenAiStreamEvents::Of(const v1::GenerateResponse& m) {
  std::vector<std::string> events;
  const int32_t index = m.choice_index();
  if (index < 0 || index >= static_cast<int32_t>(choices_.size())) return events;
  Choice& choice = choices_[index];
  if (reply_.chat() && !choice.role_sent) {
    choice.role_sent = true;
    events.push_back(reply_.RoleChunk(index));
  }
  // With logprobs, tokens whose text is held back (an unfinished character) still send theirs.
  const v1::TokenDelta& d = m.delta();
  const bool has_logprobs = choice.logprobs && d.logprobs_size() > 0;
  const bool has_parts = !d.reasoning_text().empty() || d.tool_calls_size() > 0;
  if (m.has_delta() && (!d.text().empty() || has_logprobs || has_parts)) {
    json::Value logprobs = choice.logprobs ? choice.logprobs->Of(d.logprobs()) : json::Value();
    events.push_back(reply_.chat() ? reply_.DeltaChunk(d, std::move(logprobs), index)
                                   : reply_.TextChunk(d.text(), std::move(logprobs), index));
  }
  if (m.has_final()) {
    events.push_back(reply_.FinishChunk(m.final(), index));
    if (index == 0) first_ = m.final();
    // The usage (the request's) once, after the last choice's finish, with choice 0's
    // speculation metrics (as a reply that is not streamed has them).
    if (++finished_ == static_cast<int32_t>(choices_.size()) && reply_.include_usage()) {
      v1::GenerationResult usage = first_;
      if (m.final().has_request_usage()) {
        *usage.mutable_request_usage() = m.final().request_usage();
      }
      events.push_back(reply_.UsageChunk(usage));
    }
  }
  return events;
}

}  // namespace tandem
