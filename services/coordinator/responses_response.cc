#include "services/coordinator/responses_response.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/coordinator/openai_response.h"

namespace tandem {
namespace {

std::string Compact(const json::Value& value) {
  json::SerializeOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return json::Serialize(value, options);
}

bool Incomplete(const v1::GenerationResult& result) {
  return result.finish_reason() == v1::FINISH_REASON_LENGTH ||
         result.finish_reason() == v1::FINISH_REASON_CONTEXT_FULL;
}

json::Object Usage(const v1::GenerationResult& result) {
  const v1::Usage& u = result.usage();
  return {{"input_tokens", u.prompt_tokens()},
          {"input_tokens_details", json::Object{{"cached_tokens", u.cached_prompt_tokens()}}},
          {"output_tokens", u.generated_tokens()},
          {"output_tokens_details", json::Object{{"reasoning_tokens", 0}}},
          {"total_tokens", int64_t{u.prompt_tokens()} + u.generated_tokens()}};
}

json::Object TextPart(std::string text) {
  return {{"type", "output_text"}, {"text", std::move(text)}, {"annotations", json::Array{}}};
}

json::Object ReasoningPart(std::string text) {
  return {{"type", "reasoning_text"}, {"text", std::move(text)}};
}

}  // namespace

ResponsesReply::ResponsesReply(std::string id, int64_t created, std::string model,
                               const ResponsesRequest& request)
    : id_(std::move(id)), created_(created), model_(std::move(model)) {
  echo_ = {
      {"instructions", request.instructions},
      {"max_output_tokens", request.max_output_tokens},
      {"temperature", request.temperature},
      {"top_p", request.top_p},
      {"tools", request.tools},
      {"tool_choice", request.tool_choice},
      {"parallel_tool_calls",
       request.generate.has_parallel_tool_calls() ? request.generate.parallel_tool_calls() : true},
      {"text", json::Object{{"format", request.text_format}}},
      {"metadata", request.metadata},
      {"store", false},
      {"previous_response_id", nullptr}};
}

std::string ResponsesReply::ItemId(const char* prefix, int index) const {
  return absl::StrCat(prefix, "_", id_.substr(id_.find('_') + 1), "_", index);
}

json::Object ResponsesReply::Response(const char* status, json::Array output,
                                      const v1::GenerationResult* result) const {
  json::Object r{{"id", id_},        {"object", "response"},       {"created_at", created_},
                 {"status", status}, {"error", nullptr},           {"incomplete_details", nullptr},
                 {"model", model_},  {"output", std::move(output)}};
  for (const auto& [key, value] : echo_) r.Set(key, value);
  r.Set("usage", nullptr);
  if (result != nullptr) {
    if (Incomplete(*result)) {
      r.Set("incomplete_details", json::Object{{"reason", "max_output_tokens"}});
    }
    r.Set("usage", Usage(*result));
    r.Set("tandem", TandemStatistics(*result));
  }
  return r;
}

json::Array ResponsesReply::Output(const CollectedReply& reply) const {
  json::Array output;
  const char* status = Incomplete(reply.result) ? "incomplete" : "completed";
  if (!reply.reasoning.empty()) {
    output.emplace_back(json::Object{{"type", "reasoning"},
                                     {"id", ItemId("rs", output.size())},
                                     {"summary", json::Array{}},
                                     {"content", json::Array{ReasoningPart(reply.reasoning)}}});
  }
  if (!reply.text.empty() || reply.result.tool_calls_size() == 0) {
    output.emplace_back(json::Object{{"type", "message"},
                                     {"id", ItemId("msg", output.size())},
                                     {"status", status},
                                     {"role", "assistant"},
                                     {"content", json::Array{TextPart(reply.text)}}});
  }
  for (const v1::ToolCall& call : reply.result.tool_calls()) {
    output.emplace_back(json::Object{{"type", "function_call"},
                                     {"id", ItemId("fc", output.size())},
                                     {"call_id", call.id()},
                                     {"name", call.name()},
                                     {"arguments", call.arguments()},
                                     {"status", "completed"}});
  }
  return output;
}

std::string ResponsesReply::Complete(const CollectedReply& reply) {
  const char* status = Incomplete(reply.result) ? "incomplete" : "completed";
  return Compact(Response(status, Output(reply), &reply.result));
}

std::string ResponsesReply::Event(const char* type, json::Object fields) {
  json::Object event{{"type", type}};
  for (auto& [key, value] : fields) event.Set(key, std::move(value));
  event.Set("sequence_number", sequence_++);
  return SseEvent(type, Compact(event));
}

void ResponsesReply::Close(std::vector<std::string>* events) {
  if (open_ == Kind::kNone) return;
  const std::string item_id = item_.Find("id")->as_string();
  if (open_ == Kind::kMessage) {
    events->push_back(Event("response.output_text.done", {{"item_id", item_id},
                                                          {"output_index", index_},
                                                          {"content_index", 0},
                                                          {"text", item_text_}}));
    events->push_back(Event("response.content_part.done", {{"item_id", item_id},
                                                           {"output_index", index_},
                                                           {"content_index", 0},
                                                           {"part", TextPart(item_text_)}}));
    item_.Set("content", json::Array{TextPart(item_text_)});
  } else if (open_ == Kind::kReasoning) {
    events->push_back(Event("response.reasoning_text.done", {{"item_id", item_id},
                                                             {"output_index", index_},
                                                             {"content_index", 0},
                                                             {"text", item_text_}}));
    events->push_back(Event("response.content_part.done", {{"item_id", item_id},
                                                           {"output_index", index_},
                                                           {"content_index", 0},
                                                           {"part", ReasoningPart(item_text_)}}));
    item_.Set("content", json::Array{ReasoningPart(item_text_)});
  } else {
    events->push_back(Event("response.function_call_arguments.done", {{"item_id", item_id},
                                                                      {"output_index", index_},
                                                                      {"name", *item_.Find("name")},
                                                                      {"arguments", item_text_}}));
    item_.Set("arguments", item_text_);
  }
  if (item_.Contains("status")) item_.Set("status", "completed");
  events->push_back(
      Event("response.output_item.done", {{"output_index", index_}, {"item", item_}}));
  done_.emplace_back(std::move(item_));
  item_ = json::Object{};
  item_text_.clear();
  open_ = Kind::kNone;
}

void ResponsesReply::Open(Kind kind, json::Object item, std::vector<std::string>* events) {
  Close(events);
  open_ = kind;
  ++index_;
  item_ = std::move(item);
  events->push_back(
      Event("response.output_item.added", {{"output_index", index_}, {"item", item_}}));
  if (kind != Kind::kCall) {  // a message's or reasoning's one part
    events->push_back(Event("response.content_part.added",
                            {{"item_id", item_.Find("id")->as_string()},
                             {"output_index", index_},
                             {"content_index", 0},
                             {"part", kind == Kind::kMessage ? TextPart("") : ReasoningPart("")}}));
  }
}

std::vector<std::string> ResponsesReply::Events(const v1::GenerateResponse& m) {
  std::vector<std::string> events;
  if (!started_) {
    started_ = true;
    events.push_back(
        Event("response.created", {{"response", Response("in_progress", {}, nullptr)}}));
    events.push_back(
        Event("response.in_progress", {{"response", Response("in_progress", {}, nullptr)}}));
  }
  const v1::TokenDelta& d = m.delta();
  if (!d.reasoning_text().empty()) {
    if (open_ != Kind::kReasoning) {
      Open(Kind::kReasoning,
           {{"type", "reasoning"},
            {"id", ItemId("rs", index_ + 1)},
            {"summary", json::Array{}},
            {"content", json::Array{}}},
           &events);
    }
    item_text_ += d.reasoning_text();
    events.push_back(
        Event("response.reasoning_text.delta", {{"item_id", item_.Find("id")->as_string()},
                                                {"output_index", index_},
                                                {"content_index", 0},
                                                {"delta", d.reasoning_text()}}));
  }
  if (!d.text().empty()) {
    if (open_ != Kind::kMessage) {
      Open(Kind::kMessage,
           {{"type", "message"},
            {"id", ItemId("msg", index_ + 1)},
            {"status", "in_progress"},
            {"role", "assistant"},
            {"content", json::Array{}}},
           &events);
    }
    item_text_ += d.text();
    events.push_back(
        Event("response.output_text.delta", {{"item_id", item_.Find("id")->as_string()},
                                             {"output_index", index_},
                                             {"content_index", 0},
                                             {"delta", d.text()},
                                             {"logprobs", json::Array{}}}));
  }
  for (const v1::ToolCallDelta& piece : d.tool_calls()) {
    if (!piece.name().empty() || open_ != Kind::kCall) {  // a call's first piece
      Open(Kind::kCall,
           {{"type", "function_call"},
            {"id", ItemId("fc", index_ + 1)},
            {"call_id", piece.id()},
            {"name", piece.name()},
            {"arguments", ""},
            {"status", "in_progress"}},
           &events);
    }
    if (piece.arguments().empty()) continue;
    item_text_ += piece.arguments();
    events.push_back(
        Event("response.function_call_arguments.delta", {{"item_id", item_.Find("id")->as_string()},
                                                         {"output_index", index_},
                                                         {"delta", piece.arguments()}}));
  }
  if (m.has_final()) {
    const v1::GenerationResult& result = m.final();
    // A reply with no item at all still gets its (empty) message, as Complete() gives it.
    if (index_ < 0) {
      Open(Kind::kMessage,
           {{"type", "message"},
            {"id", ItemId("msg", 0)},
            {"status", "in_progress"},
            {"role", "assistant"},
            {"content", json::Array{}}},
           &events);
    }
    Close(&events);
    const bool incomplete = Incomplete(result);
    if (incomplete) {  // the message items end "incomplete" too
      for (json::Value& item : done_) {
        if (item.as_object().Find("type")->as_string() == "message") {
          item.as_object().Set("status", "incomplete");
        }
      }
    }
    events.push_back(Event(incomplete ? "response.incomplete" : "response.completed",
                           {{"response", Response(incomplete ? "incomplete" : "completed",
                                                  std::move(done_), &result)}}));
    done_ = json::Array{};
  }
  return events;
}

std::string ResponsesReply::StreamError(const HttpError& error) {
  return Event("error",
               {{"code", error.code},
                {"message", error.message},
                {"param", error.param.empty() ? json::Value() : json::Value(error.param)}});
}

std::string ResponsesReply::ErrorBody(const HttpError& error) const { return HttpErrorBody(error); }

}  // namespace tandem
