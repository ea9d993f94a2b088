#include "services/coordinator/responses_response.h"

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

std::pair<std::string, json::Value> Split(const std::string& event) {
  const size_t data = event.find("\ndata: ");
  EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
  return {event.substr(7, data - 7), Parse(event.substr(data + 7))};
}

ResponsesRequest Request(const char* body) {
  absl::StatusOr<ResponsesRequest> r = ParseResponsesRequest(body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ResponsesRequest();
}

const json::Value* Get(const json::Value& v, const char* key) { return v.as_object().Find(key); }

TEST(ResponsesResponseTest, CompleteHasItemsUsageAndTheRequestsFields) {
  ResponsesReply reply("resp_a-1", 100, "m",
                       Request(R"({"model": "m", "input": "x", "instructions": "i",
                                   "max_output_tokens": 9, "temperature": 0})"));
  const json::Value body = Parse(
      reply.Complete(Collected("Sure.", "hm", Result(R"(finish_reason: FINISH_REASON_STOP_TOKEN
                 usage { prompt_tokens: 7 generated_tokens: 3 cached_prompt_tokens: 2 }
                 tool_calls { id: "call_1" name: "get" arguments: "{\"a\": 1}" })"))));
  EXPECT_EQ(*Get(body, "id"), json::Value("resp_a-1"));
  EXPECT_EQ(*Get(body, "object"), json::Value("response"));
  EXPECT_EQ(*Get(body, "created_at"), json::Value(100));
  EXPECT_EQ(*Get(body, "status"), json::Value("completed"));
  EXPECT_EQ(*Get(body, "incomplete_details"), json::Value());
  EXPECT_EQ(*Get(body, "instructions"), json::Value("i"));
  EXPECT_EQ(*Get(body, "max_output_tokens"), json::Value(9));
  EXPECT_EQ(*Get(body, "store"), json::Value(false));
  EXPECT_EQ(*Get(body, "output"), Parse(R"([
      {"type": "reasoning", "id": "rs_a-1_0", "summary": [],
       "content": [{"type": "reasoning_text", "text": "hm"}]},
      {"type": "message", "id": "msg_a-1_1", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Sure.", "annotations": []}]},
      {"type": "function_call", "id": "fc_a-1_2", "call_id": "call_1", "name": "get",
       "arguments": "{\"a\": 1}", "status": "completed"}])"));
  EXPECT_EQ(*Get(body, "usage"), Parse(R"({"input_tokens": 7,
      "input_tokens_details": {"cached_tokens": 2}, "output_tokens": 3,
      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 10})"));
}

TEST(ResponsesResponseTest, MaxTokensMakeItIncomplete) {
  ResponsesReply reply("resp_a-1", 100, "m", Request(R"({"model": "m", "input": "x"})"));
  for (const char* finish : {"FINISH_REASON_LENGTH", "FINISH_REASON_CONTEXT_FULL"}) {
    const json::Value body =
        Parse(reply.Complete(Collected("ab", "", Result(absl::StrCat("finish_reason: ", finish)))));
    EXPECT_EQ(*Get(body, "status"), json::Value("incomplete"));
    EXPECT_EQ(*Get(body, "incomplete_details"), Parse(R"({"reason": "max_output_tokens"})"));
  }
}

TEST(ResponsesResponseTest, StreamEventsAreNumberedAndEndWithTheWholeResponse) {
  ResponsesReply reply("resp_a-1", 100, "m", Request(R"({"model": "m", "input": "x"})"));
  std::vector<std::string> events;
  for (const char* m : {R"(delta { text: "He" })", R"(delta { text: "llo" })",
                        R"(delta { tool_calls { index: 0 id: "c1" name: "f" arguments: "{" } })",
                        R"(delta { tool_calls { index: 0 arguments: "}" } })",
                        R"(final { finish_reason: FINISH_REASON_STOP_TOKEN
                                   usage { prompt_tokens: 4 generated_tokens: 6 }
                                   tool_calls { id: "c1" name: "f" arguments: "{}" } })"}) {
    for (std::string& e : reply.Events(Message(m))) events.push_back(std::move(e));
  }
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  ASSERT_EQ(events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    auto [name, data] = Split(events[i]);
    EXPECT_EQ(name, want[i]) << i;
    EXPECT_EQ(*Get(data, "type"), json::Value(want[i])) << i;
    EXPECT_EQ(*Get(data, "sequence_number"), json::Value(static_cast<int64_t>(i))) << i;
  }
  EXPECT_EQ(*Get(Split(events[6]).second, "text"), json::Value("Hello"));
  EXPECT_EQ(*Get(Split(events[12]).second, "arguments"), json::Value("{}"));
  const json::Value done = *Get(Split(events.back()).second, "response");
  EXPECT_EQ(*Get(done, "status"), json::Value("completed"));
  EXPECT_EQ(*Get(done, "output"), Parse(R"([
      {"type": "message", "id": "msg_a-1_0", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Hello", "annotations": []}]},
      {"type": "function_call", "id": "fc_a-1_1", "call_id": "c1", "name": "f",
       "arguments": "{}", "status": "completed"}])"));
  EXPECT_EQ(*Get(*Get(done, "usage"), "total_tokens"), json::Value(10));
}

TEST(ResponsesResponseTest, ReasoningStreamsAsAReasoningItemWithOnePart) {
  ResponsesReply reply("resp_a-1", 100, "m", Request(R"({"model": "m", "input": "x"})"));
  std::vector<std::string> names;
  for (const char* m : {R"(delta { reasoning_text: "h" })", R"(delta { reasoning_text: "m" })",
                        R"(final { finish_reason: FINISH_REASON_LENGTH })"}) {
    for (const std::string& e : reply.Events(Message(m))) names.push_back(Split(e).first);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.reasoning_text.delta",
                "response.reasoning_text.delta", "response.reasoning_text.done",
                "response.content_part.done", "response.output_item.done", "response.incomplete"}));
}

TEST(ResponsesResponseTest, AStreamCutByMaxTokensEndsIncomplete) {
  ResponsesReply reply("resp_a-1", 100, "m", Request(R"({"model": "m", "input": "x"})"));
  reply.Events(Message(R"(delta { text: "a" })"));
  std::vector<std::string> last =
      reply.Events(Message(R"(final { finish_reason: FINISH_REASON_LENGTH })"));
  auto [name, data] = Split(last.back());
  EXPECT_EQ(name, "response.incomplete");
  EXPECT_EQ(*Get(*Get(data, "response"), "status"), json::Value("incomplete"));
}

TEST(ResponsesResponseTest, AStreamErrorNamesCodeAndParam) {
  ResponsesReply reply("resp_a-1", 100, "m", Request(R"({"model": "m", "input": "x"})"));
  reply.Events(Message(R"(delta { text: "a" })"));
  auto [name, data] = Split(reply.StreamError({500, "server_error", "internal", "boom", ""}));
  EXPECT_EQ(name, "error");
  EXPECT_EQ(*Get(data, "code"), json::Value("internal"));
  EXPECT_EQ(*Get(data, "message"), json::Value("boom"));
  EXPECT_EQ(*Get(data, "param"), json::Value());
  EXPECT_EQ(*Get(data, "sequence_number"), json::Value(int64_t{5}));  // after 5 events
}

}  // namespace
}  // namespace tandem
