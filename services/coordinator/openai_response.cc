#include "services/coordinator/openai_response.h"

#include <cmath>
#include <utility>

#include "services/coordinator/speculation_metrics.h"

namespace tandem {
namespace {

// JSON has no NaN or infinity; a statistic that is not finite (none is expected) becomes 0.
json::Value Finite(double d) { return std::isfinite(d) ? d : 0.0; }

std::string Serialize(const json::Object& object) {
  json::SerializeOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return json::Serialize(object, options);
}

// message.tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
json::Array ToolCalls(const v1::GenerationResult& result) {
  json::Array calls;
  for (const v1::ToolCall& call : result.tool_calls()) {
    calls.emplace_back(json::Object{
        {"id", call.id()},
        {"type", "function"},
        {"function", json::Object{{"name", call.name()}, {"arguments", call.arguments()}}}});
  }
  return calls;
}

}  // namespace

const char* OpenAiFinishReason(const v1::GenerationResult& result) {
  switch (result.finish_reason()) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT_FULL:
      return "length";
    default:
      return result.tool_calls_size() > 0 ? "tool_calls" : "stop";
  }
}

json::Object OpenAiUsage(const v1::GenerationResult& result) {
  // Several choices: the request's (the prompt once, the choices' tokens summed).
  const v1::Usage& u = result.has_request_usage() ? result.request_usage() : result.usage();
  return {{"prompt_tokens", u.prompt_tokens()},
          {"completion_tokens", u.generated_tokens()},
          {"total_tokens", int64_t{u.prompt_tokens()} + u.generated_tokens()},
          {"prompt_tokens_details", json::Object{{"cached_tokens", u.cached_prompt_tokens()}}},
          {"completion_tokens_details", CompletionTokensDetails(u)}};
}

json::Object TandemStatistics(const v1::GenerationResult& result) {
  const v1::SpeculationStats& s = result.speculation();
  json::Array per_position;
  for (int32_t n : s.accepted_per_position()) per_position.emplace_back(n);
  const v1::Timing& t = result.timing();
  return {{"session_id", result.session_id()},
          {"seed", static_cast<int64_t>(result.seed())},
          {"speculation", json::Object{{"rounds", s.rounds()},
                                       {"drafted_tokens", s.drafted_tokens()},
                                       {"accepted_tokens", s.accepted_tokens()},
                                       {"acceptance_rate", Finite(s.acceptance_rate())},
                                       {"tokens_per_round", Finite(s.tokens_per_round())},
                                       {"accepted_per_position", std::move(per_position)},
                                       {"draft_failed", s.draft_failed()},
                                       {"final_draft_tokens", s.final_draft_tokens()},
                                       {"pipelined", s.pipelined()},
                                       {"predrafted_rounds", s.predrafted_rounds()},
                                       {"forced_tokens", s.forced_tokens()},
                                       {"forced_accepted_tokens", s.forced_accepted_tokens()},
                                       {"predicted_tokens", s.predicted_tokens()},
                                       {"predicted_accepted_tokens", s.predicted_accepted_tokens()},
                                       {"predicted_rounds", s.predicted_rounds()}}},
          {"timing",
           json::Object{{"prefill_seconds", Finite(t.prefill_seconds())},
                        {"decode_seconds", Finite(t.decode_seconds())},
                        {"time_to_first_token_seconds", Finite(t.time_to_first_token_seconds())},
                        {"total_seconds", Finite(t.total_seconds())},
                        {"decode_tokens_per_second", Finite(t.decode_tokens_per_second())}}}};
}

OpenAiReply::OpenAiReply(OpenAiEndpoint endpoint, std::string id, int64_t created,
                         std::string model, bool include_usage)
    : endpoint_(endpoint),
      id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      include_usage_(include_usage) {}

json::Object OpenAiReply::Head(bool chunk) const {
  const char* object =
      chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  json::Object head{{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
  if (!system_fingerprint_.empty()) head.Set("system_fingerprint", system_fingerprint_);  // #30
  return head;
}

std::string OpenAiReply::Complete(const std::string& text, const std::string& reasoning,
                                  const v1::GenerationResult& result, json::Value logprobs) const {
  return CompleteChoices(json::Array{Choice(0, text, reasoning, result, std::move(logprobs))},
                         result, result);
}

// --- #30 n choices ---
std::string OpenAiReply::CompleteChoices(json::Array choices, const v1::GenerationResult& usage,
                                         const v1::GenerationResult& first) const {
  json::Object reply = Head(false);
  reply.Set("choices", std::move(choices));
  reply.Set("usage", OpenAiUsage(usage));
  reply.Set("metrics", SpeculationMetrics(first.speculation()));
  reply.Set("tandem", TandemStatistics(first));
  return Serialize(reply);
}
// --- end ---

json::Object OpenAiReply::Choice(int32_t index, const std::string& text,
                                 const std::string& reasoning, const v1::GenerationResult& result,
                                 json::Value logprobs) const {
  json::Object choice{{"index", index}};
  if (chat()) {
    const bool calls = result.tool_calls_size() > 0;
    json::Object message{{"role", "assistant"},
                         {"content", calls && text.empty() ? json::Value() : json::Value(text)}};
    if (!reasoning.empty()) message.Set("reasoning_content", reasoning);
    if (calls) message.Set("tool_calls", ToolCalls(result));
    choice.Set("message", std::move(message));
  } else {
    choice.Set("text", text);
  }
  choice.Set("logprobs", std::move(logprobs));
  choice.Set("finish_reason", OpenAiFinishReason(result));
  return choice;
}

std::string OpenAiReply::Chunk(json::Object choice, const v1::GenerationResult* result) const {
  json::Object chunk = Head(true);
  chunk.Set("choices", json::Array{std::move(choice)});
  if (include_usage_) chunk.Set("usage", nullptr);  // OpenAI: null on all but the usage chunk
  if (result != nullptr) chunk.Set("tandem", TandemStatistics(*result));
  return Serialize(chunk);
}

std::string OpenAiReply::RoleChunk(int32_t index) const {
  json::Object choice{{"index", index},
                      {"delta", json::Object{{"role", "assistant"}, {"content", ""}}},
                      {"logprobs", nullptr},
                      {"finish_reason", nullptr}};
  return Chunk(std::move(choice), nullptr);
}

std::string OpenAiReply::TextChunk(const std::string& text, json::Value logprobs,
                                   int32_t index) const {
  json::Object choice{{"index", index}};
  if (chat()) {
    choice.Set("delta", json::Object{{"content", text}});
  } else {
    choice.Set("text", text);
  }
  choice.Set("logprobs", std::move(logprobs));
  choice.Set("finish_reason", nullptr);
  return Chunk(std::move(choice), nullptr);
}

std::string OpenAiReply::DeltaChunk(const v1::TokenDelta& delta, json::Value logprobs,
                                    int32_t index) const {
  json::Object fields;
  if (!delta.text().empty()) fields.Set("content", delta.text());
  if (!delta.reasoning_text().empty()) fields.Set("reasoning_content", delta.reasoning_text());
  if (delta.tool_calls_size() > 0) {
    json::Array calls;
    for (const v1::ToolCallDelta& piece : delta.tool_calls()) {
      json::Object call{{"index", piece.index()}};
      json::Object function{{"arguments", piece.arguments()}};
      if (!piece.name().empty()) {  // the call's first piece
        call.Set("id", piece.id());
        call.Set("type", "function");
        function = json::Object{{"name", piece.name()}, {"arguments", piece.arguments()}};
      }
      call.Set("function", std::move(function));
      calls.emplace_back(std::move(call));
    }
    fields.Set("tool_calls", std::move(calls));
  }
  if (fields.empty()) fields.Set("content", "");  // logprobs of text held back
  json::Object choice{{"index", index}, {"delta", std::move(fields)}};
  choice.Set("logprobs", std::move(logprobs));
  choice.Set("finish_reason", nullptr);
  return Chunk(std::move(choice), nullptr);
}

std::string OpenAiReply::FinishChunk(const v1::GenerationResult& result, int32_t index) const {
  json::Object choice{{"index", index}};
  if (chat()) {
    choice.Set("delta", json::Object{});
  } else {
    choice.Set("text", "");
  }
  choice.Set("logprobs", nullptr);
  choice.Set("finish_reason", OpenAiFinishReason(result));
  return Chunk(std::move(choice), &result);
}

std::string OpenAiReply::UsageChunk(const v1::GenerationResult& result) const {
  json::Object chunk = Head(true);
  chunk.Set("choices", json::Array{});
  chunk.Set("usage", OpenAiUsage(result));
  chunk.Set("metrics", SpeculationMetrics(result.speculation()));
  return Serialize(chunk);
}

}  // namespace tandem
