#include "services/coordinator/anthropic_response.h"

#include <utility>

#include "services/coordinator/openai_response.h"

namespace tandem {
namespace {

std::string Compact(const json::Value& value) {
  json::SerializeOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return json::Serialize(value, options);
}

std::string Event(const char* type, json::Object data) {
  json::Object event{{"type", type}};
  for (auto& [key, value] : data) event.Set(key, std::move(value));
  return SseEvent(type, Compact(event));
}

// A call's arguments as the object tool_use.input is ({} when they are not one).
json::Value Input(const std::string& arguments) {
  absl::StatusOr<json::Value> parsed = json::Parse(arguments);
  if (!parsed.ok() || !parsed->is_object()) return json::Object{};
  return *std::move(parsed);
}

json::Object Usage(const v1::GenerationResult& result) {
  const v1::Usage& u = result.usage();
  return {{"input_tokens", u.prompt_tokens()},
          {"output_tokens", u.generated_tokens()},
          {"cache_read_input_tokens", u.cached_prompt_tokens()}};
}

}  // namespace

const char* AnthropicErrorType(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

std::string AnthropicErrorBody(const HttpError& error) {
  return Compact(json::Object{{"type", "error"},
                              {"error", json::Object{{"type", AnthropicErrorType(error.status)},
                                                     {"message", error.message}}}});
}

AnthropicReply::AnthropicReply(std::string id, std::string model,
                               std::vector<std::string> stop_sequences)
    : id_(std::move(id)), model_(std::move(model)), stop_sequences_(std::move(stop_sequences)) {}

const char* AnthropicReply::StopReason(const v1::GenerationResult& result) const {
  if (result.tool_calls_size() > 0) return "tool_use";
  switch (result.finish_reason()) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT_FULL:
      return "max_tokens";
    case v1::FINISH_REASON_STOP_STRING:
      return "stop_sequence";
    default:
      return "end_turn";
  }
}

json::Value AnthropicReply::StopSequence(const v1::GenerationResult& result) const {
  if (result.finish_reason() != v1::FINISH_REASON_STOP_STRING || stop_sequences_.size() != 1) {
    return nullptr;
  }
  return stop_sequences_[0];
}

std::string AnthropicReply::Complete(const CollectedReply& reply) {
  const v1::GenerationResult& result = reply.result;
  json::Array content;
  if (!reply.reasoning.empty()) {
    content.emplace_back(
        json::Object{{"type", "thinking"}, {"thinking", reply.reasoning}, {"signature", ""}});
  }
  if (!reply.text.empty() || (result.tool_calls_size() == 0 && reply.reasoning.empty())) {
    content.emplace_back(json::Object{{"type", "text"}, {"text", reply.text}});
  }
  for (const v1::ToolCall& call : result.tool_calls()) {
    content.emplace_back(json::Object{{"type", "tool_use"},
                                      {"id", call.id()},
                                      {"name", call.name()},
                                      {"input", Input(call.arguments())}});
  }
  return Compact(json::Object{{"id", id_},
                              {"type", "message"},
                              {"role", "assistant"},
                              {"model", model_},
                              {"content", std::move(content)},
                              {"stop_reason", StopReason(result)},
                              {"stop_sequence", StopSequence(result)},
                              {"usage", Usage(result)},
                              {"tandem", TandemStatistics(result)}});
}

void AnthropicReply::Close(std::vector<std::string>* events) {
  if (open_ == Block::kNone) return;
  events->push_back(Event("content_block_stop", {{"index", index_}}));
  open_ = Block::kNone;
}

void AnthropicReply::Open(Block kind, json::Object start, std::vector<std::string>* events) {
  Close(events);
  open_ = kind;
  ++index_;
  events->push_back(
      Event("content_block_start", {{"index", index_}, {"content_block", std::move(start)}}));
}

void AnthropicReply::Delta(json::Object delta, std::vector<std::string>* events) {
  events->push_back(Event("content_block_delta", {{"index", index_}, {"delta", std::move(delta)}}));
}

std::vector<std::string> AnthropicReply::Events(const v1::GenerateResponse& m) {
  std::vector<std::string> events;
  if (!started_) {
    started_ = true;
    json::Object message{{"id", id_},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"model", model_},
                         {"content", json::Array{}},
                         {"stop_reason", nullptr},
                         {"stop_sequence", nullptr},
                         {"usage", json::Object{{"input_tokens", 0}, {"output_tokens", 0}}}};
    events.push_back(Event("message_start", {{"message", std::move(message)}}));
    events.push_back(Event("ping", {}));
  }
  const v1::TokenDelta& d = m.delta();
  if (!d.reasoning_text().empty()) {
    if (open_ != Block::kThinking) {
      Open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, &events);
    }
    Delta({{"type", "thinking_delta"}, {"thinking", d.reasoning_text()}}, &events);
  }
  if (!d.text().empty()) {
    if (open_ != Block::kText) Open(Block::kText, {{"type", "text"}, {"text", ""}}, &events);
    Delta({{"type", "text_delta"}, {"text", d.text()}}, &events);
  }
  for (const v1::ToolCallDelta& piece : d.tool_calls()) {
    if (!piece.name().empty() || open_ != Block::kToolUse) {  // a call's first piece
      Open(Block::kToolUse,
           {{"type", "tool_use"},
            {"id", piece.id()},
            {"name", piece.name()},
            {"input", json::Object{}}},
           &events);
    }
    if (!piece.arguments().empty()) {
      Delta({{"type", "input_json_delta"}, {"partial_json", piece.arguments()}}, &events);
    }
  }
  if (m.has_final()) {
    const v1::GenerationResult& result = m.final();
    // A reply with no block at all still gets its (empty) text block, as Anthropic sends one.
    if (index_ < 0) Open(Block::kText, {{"type", "text"}, {"text", ""}}, &events);
    Close(&events);
    events.push_back(
        Event("message_delta", {{"delta", json::Object{{"stop_reason", StopReason(result)},
                                                       {"stop_sequence", StopSequence(result)}}},
                                {"usage", Usage(result)},
                                {"tandem", TandemStatistics(result)}}));
    events.push_back(Event("message_stop", {}));
  }
  return events;
}

std::string AnthropicReply::StreamError(const HttpError& error) {
  return SseEvent("error", AnthropicErrorBody(error));
}

}  // namespace tandem
