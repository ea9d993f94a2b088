#include "services/coordinator/anthropic_response.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

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

v1::GenerationResult Result(const std::string& text) {
  v1::GenerationResult r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

v1::GenerateResponse Message(const std::string& text) {
  v1::GenerateResponse m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

json::Value Parse(const std::string& text) {
  absl::StatusOr<json::Value> v = json::Parse(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : json::Value();
}

// An SSE event's name and data.
std::pair<std::string, json::Value> Split(const std::string& event) {
  const size_t data = event.find("\ndata: ");
  EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n") << event;
  return {event.substr(7, data - 7), Parse(event.substr(data + 7))};
}

TEST(AnthropicResponseTest, StopReasonsMapFromTheResult) {
  const struct {
    const char* result;
    std::vector<std::string> stops;
    const char* stop_reason;
    json::Value stop_sequence;
  } kCases[] = {
      {"finish_reason: FINISH_REASON_STOP_TOKEN", {}, "end_turn", nullptr},
      {"finish_reason: FINISH_REASON_LENGTH", {}, "max_tokens", nullptr},
      {"finish_reason: FINISH_REASON_CONTEXT_FULL", {}, "max_tokens", nullptr},
      {"finish_reason: FINISH_REASON_STOP_STRING", {"END"}, "stop_sequence", "END"},
      {"finish_reason: FINISH_REASON_STOP_STRING", {"A", "B"}, "stop_sequence", nullptr},
      {"finish_reason: FINISH_REASON_STOP_TOKEN tool_calls { id: \"c\" name: \"f\" }",
       {},
       "tool_use",
       nullptr},
  };
  for (const auto& c : kCases) {
    AnthropicReply reply("msg_1", "m", c.stops);
    const json::Value body = Parse(reply.Complete(Collected("hi", "", Result(c.result))));
    EXPECT_EQ(*body.as_object().Find("stop_reason"), json::Value(c.stop_reason)) << c.result;
    EXPECT_EQ(*body.as_object().Find("stop_sequence"), c.stop_sequence) << c.result;
  }
}

TEST(AnthropicResponseTest, CompleteHasThinkingTextAndToolUseBlocks) {
  AnthropicReply reply("msg_1", "m", {});
  const json::Value body = Parse(reply.Complete(
      Collected("Sure.", "Let me think.", Result(R"(finish_reason: FINISH_REASON_STOP_TOKEN
                 usage { prompt_tokens: 7 generated_tokens: 3 cached_prompt_tokens: 2 }
                 tool_calls { id: "call_1" name: "get" arguments: "{\"city\": \"Paris\"}" }
                 tool_calls { id: "call_2" name: "get" arguments: "not json" })"))));
  const json::Object& o = body.as_object();
  EXPECT_EQ(*o.Find("id"), json::Value("msg_1"));
  EXPECT_EQ(*o.Find("type"), json::Value("message"));
  EXPECT_EQ(*o.Find("role"), json::Value("assistant"));
  EXPECT_EQ(*o.Find("model"), json::Value("m"));
  EXPECT_EQ(*o.Find("content"), Parse(R"([
      {"type": "thinking", "thinking": "Let me think.", "signature": ""},
      {"type": "text", "text": "Sure."},
      {"type": "tool_use", "id": "call_1", "name": "get", "input": {"city": "Paris"}},
      {"type": "tool_use", "id": "call_2", "name": "get", "input": {}}])"));
  EXPECT_EQ(*o.Find("usage"),
            Parse(R"({"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 2})"));
  EXPECT_NE(o.Find("tandem"), nullptr);
}

TEST(AnthropicResponseTest, AnEmptyReplyStillHasATextBlock) {
  AnthropicReply reply("msg_1", "m", {});
  const json::Value body = Parse(reply.Complete(Collected("", "", Result(""))));
  EXPECT_EQ(*body.as_object().Find("content"), Parse(R"([{"type": "text", "text": ""}])"));
}

TEST(AnthropicResponseTest, StreamEventsFollowAnthropicsOrder) {
  AnthropicReply reply("msg_1", "m", {});
  std::vector<std::string> events;
  for (const char* m :
       {R"(delta { reasoning_text: "hm" })", R"(delta { text: "He" })", R"(delta { text: "llo" })",
        R"(delta { tool_calls { index: 0 id: "c1" name: "f" arguments: "{\"a\"" } })",
        R"(delta { tool_calls { index: 0 arguments: ": 1}" } })",
        R"(final { finish_reason: FINISH_REASON_STOP_TOKEN
                                   usage { prompt_tokens: 4 generated_tokens: 6 }
                                   tool_calls { id: "c1" name: "f" arguments: "{\"a\": 1}" } })"}) {
    for (std::string& e : reply.Events(Message(m))) events.push_back(std::move(e));
  }
  const std::vector<std::pair<std::string, std::string>> want = {
      {"message_start", ""},
      {"ping", R"({"type":"ping"})"},
      {"content_block_start",
       R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})"},
      {"content_block_delta",
       R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}})"},
      {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
      {"content_block_start",
       R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})"},
      {"content_block_delta",
       R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"He"}})"},
      {"content_block_delta",
       R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"llo"}})"},
      {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
      {"content_block_start",
       R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"c1","name":"f","input":{}}})"},
      {"content_block_delta",
       R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}})"},
      {"content_block_delta",
       R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":": 1}"}})"},
      {"content_block_stop", R"({"type":"content_block_stop","index":2})"},
      {"message_delta", ""},
      {"message_stop", R"({"type":"message_stop"})"},
  };
  ASSERT_EQ(events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    auto [name, data] = Split(events[i]);
    EXPECT_EQ(name, want[i].first) << i;
    if (!want[i].second.empty()) {
      EXPECT_EQ(data, Parse(want[i].second)) << events[i];
    }
  }
  const json::Value start = Split(events[0]).second;
  EXPECT_EQ(*start.as_object().Find("message")->as_object().Find("id"), json::Value("msg_1"));
  const json::Value delta = Split(events[13]).second;
  EXPECT_EQ(*delta.as_object().Find("delta"),
            Parse(R"({"stop_reason": "tool_use", "stop_sequence": null})"));
  EXPECT_EQ(*delta.as_object().Find("usage"),
            Parse(R"({"input_tokens": 4, "output_tokens": 6, "cache_read_input_tokens": 0})"));
}

TEST(AnthropicResponseTest, ErrorsHaveAnthropicsShapeAndTypes) {
  const struct {
    int status;
    const char* type;
  } kCases[] = {{400, "invalid_request_error"},
                {401, "authentication_error"},
                {403, "permission_error"},
                {404, "not_found_error"},
                {413, "request_too_large"},
                {429, "rate_limit_error"},
                {503, "overloaded_error"},
                {500, "api_error"},
                {504, "api_error"}};
  for (const auto& c : kCases) {
    HttpError error{c.status, "x", "y", "bad thing", "field"};
    EXPECT_EQ(Parse(AnthropicErrorBody(error)),
              Parse(absl::StrCat(R"({"type": "error", "error": {"type": ")", c.type,
                                 R"(", "message": "bad thing"}})")))
        << c.status;
  }
  AnthropicReply reply("msg_1", "m", {});
  auto [name, data] = Split(reply.StreamError({500, "x", "y", "boom", ""}));
  EXPECT_EQ(name, "error");
  EXPECT_EQ(data, Parse(R"({"type": "error", "error": {"type": "api_error", "message": "boom"}})"));
}

}  // namespace
}  // namespace tandem
