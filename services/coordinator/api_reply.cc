#include "services/coordinator/api_reply.h"

#include "absl/strings/str_cat.h"

namespace tandem {

void Collect(const v1::GenerateResponse& message, std::vector<CollectedReply>& choices) {
  const int32_t index = message.choice_index();
  if (index < 0 || static_cast<size_t>(index) >= choices.size()) return;
  CollectedReply& choice = choices[index];
  if (message.has_delta()) {
    choice.text += message.delta().text();
    choice.reasoning += message.delta().reasoning_text();
    for (const v1::TokenLogprobs& l : message.delta().logprobs()) *choice.logprobs.Add() = l;
  }
  if (message.has_final()) choice.result = message.final();
}

std::string SseEvent(absl::string_view name, absl::string_view data) {
  if (name.empty()) return absl::StrCat("data: ", data, "\n\n");
  return absl::StrCat("event: ", name, "\ndata: ", data, "\n\n");
}

}  // namespace tandem
