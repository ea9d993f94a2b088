// An OpenAI reply of several choices (`n`) through OpenAiApiReply (openai_api_reply.h): the
// "choices" array of a reply that is not streamed (one per index, each with its own message or
// text, finish reason, logprobs, tool calls, reasoning and statistics), the chunks of a
// streamed one (each with its choice's index, its own role chunk and finish reason, the usage
// once at the end), the usage counting the prompt once, system_fingerprint everywhere.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/base/json.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "services/coordinator/api_reply.h"
#include "services/coordinator/openai_api_reply.h"

namespace tandem {
namespace {

constexpr OpenAiEndpoint kChat = OpenAiEndpoint::kChatCompletions;
constexpr OpenAiEndpoint kText = OpenAiEndpoint::kCompletions;

v1::GenerateResponse Message(const std::string& text) {
  v1::GenerateResponse m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

json::Value Parsed(const std::string& text) {
  absl::StatusOr<json::Value> v = json::Parse(text);
  EXPECT_TRUE(v.ok()) << v.status() << ": " << text;
  return v.ok() ? *v : json::Value();
}

OpenAiApiReply Reply(OpenAiEndpoint endpoint, bool include_usage, bool logprobs, int32_t n) {
  OpenAiReply openai(endpoint, "id-1", 5, "m", include_usage);
  openai.set_system_fingerprint("fp_1");
  return OpenAiApiReply(std::move(openai), endpoint, logprobs, n);
}

// The body of a reply that was not streamed, the messages collected as the server does.
json::Value Completed(OpenAiApiReply& reply, int32_t n,
                      const std::vector<v1::GenerateResponse>& messages) {
  std::vector<CollectedReply> choices(n);
  for (const v1::GenerateResponse& m : messages) Collect(m, choices);
  return Parsed(reply.CompleteChoices(choices));
}

// The chunks of a streamed reply (the SSE framing taken off).
std::vector<json::Value> Streamed(OpenAiApiReply& reply,
                                  const std::vector<v1::GenerateResponse>& messages) {
  std::vector<json::Value> chunks;
  for (const v1::GenerateResponse& m : messages) {
    for (const std::string& framed : reply.Events(m)) {
      absl::string_view event = framed;
      EXPECT_TRUE(absl::ConsumePrefix(&event, "data: ")) << framed;
      EXPECT_TRUE(absl::ConsumeSuffix(&event, "\n\n")) << framed;
      chunks.push_back(Parsed(std::string(event)));
    }
  }
  return chunks;
}

// The usage of TwoChoices(): the prompt once, both choices' tokens.
constexpr char kRequestUsage[] = R"({"prompt_tokens": 20, "completion_tokens": 5,
    "total_tokens": 25, "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"accepted_prediction_tokens": 0,
                                  "rejected_prediction_tokens": 0}})";

// Two choices as the coordinator interleaves them: choice 1 ends first (a stop), choice 0
// last (the length), carrying the request's usage.
std::vector<v1::GenerateResponse> TwoChoices() {
  return {
      Message(R"(delta { text: "Hel" token_ids: [5] } choice_index: 0)"),
      Message(R"(delta { text: "Bye" token_ids: [9] } choice_index: 1)"),
      Message(R"(final { finish_reason: FINISH_REASON_STOP_TOKEN seed: 11
                         usage { prompt_tokens: 20 cached_prompt_tokens: 16
                                 generated_tokens: 2 } } choice_index: 1)"),
      Message(R"(delta { text: "lo" token_ids: [6] } choice_index: 0)"),
      Message(R"(final { finish_reason: FINISH_REASON_LENGTH seed: 7
                         usage { prompt_tokens: 20 generated_tokens: 3 }
                         speculation { rounds: 2 drafted_tokens: 4 accepted_tokens: 3 }
                         request_usage { prompt_tokens: 20 generated_tokens: 5 } }
                 choice_index: 0)"),
  };
}

TEST(OpenAiChoicesTest, ChatReplyHasOneChoicePerIndexAndTheRequestsUsage) {
  OpenAiApiReply reply = Reply(kChat, false, false, 2);
  const json::Value v = Completed(reply, 2, TwoChoices());
  const json::Array& list = v.as_object().Find("choices")->as_array();
  ASSERT_EQ(list.size(), 2u);
  const struct {
    int64_t index;
    const char* content;
    const char* finish;
    int64_t seed;
  } kWant[] = {{0, "Hello", "length", 7}, {1, "Bye", "stop", 11}};
  for (size_t i = 0; i < 2; ++i) {
    const json::Object& c = list[i].as_object();
    EXPECT_EQ(c.Find("index")->as_int(), kWant[i].index);
    EXPECT_EQ(c.Find("message")->as_object().Find("content")->as_string(), kWant[i].content);
    EXPECT_EQ(c.Find("message")->as_object().Find("role")->as_string(), "assistant");
    EXPECT_TRUE(c.Find("logprobs")->is_null());
    EXPECT_EQ(c.Find("finish_reason")->as_string(), kWant[i].finish);
    EXPECT_EQ(c.Find("tandem")->as_object().Find("seed")->as_int(), kWant[i].seed);
  }
  const json::Object& body = v.as_object();
  EXPECT_EQ(*body.Find("usage"), Parsed(kRequestUsage));
  EXPECT_EQ(body.Find("system_fingerprint")->as_string(), "fp_1");
  // The reply's statistics and metrics are choice 0's.
  EXPECT_EQ(body.Find("tandem")->as_object().Find("seed")->as_int(), 7);
  EXPECT_EQ(body.Find("metrics")
                ->as_object()
                .Find("speculative_decoding")
                ->as_object()
                .Find("num_draft_tokens")
                ->as_int(),
            4);
}

TEST(OpenAiChoicesTest, EachChatChoiceHasItsOwnToolCallsAndReasoning) {
  OpenAiApiReply reply = Reply(kChat, false, false, 2);
  const json::Value v =
      Completed(reply, 2,
                {Message(R"(delta { reasoning_text: "think" } choice_index: 1)"),
                 Message(R"(delta { text: "plain" } choice_index: 0)"),
                 Message(R"(final { finish_reason: FINISH_REASON_STOP_TOKEN
                          tool_calls { id: "call_1" name: "f" arguments: "{}" } }
                  choice_index: 1)"),
                 Message(R"(final { finish_reason: FINISH_REASON_STOP_TOKEN request_usage { } }
                  choice_index: 0)")});
  const json::Array& list = v.as_object().Find("choices")->as_array();
  ASSERT_EQ(list.size(), 2u);
  const json::Object& first = list[0].as_object();
  const json::Object& second = list[1].as_object();
  EXPECT_EQ(*first.Find("message"), Parsed(R"({"role": "assistant", "content": "plain"})"));
  EXPECT_EQ(first.Find("finish_reason")->as_string(), "stop");
  const json::Object& message = second.Find("message")->as_object();
  EXPECT_TRUE(message.Find("content")->is_null());
  EXPECT_EQ(message.Find("reasoning_content")->as_string(), "think");
  EXPECT_EQ(message.Find("tool_calls")->as_array().size(), 1u);
  EXPECT_EQ(second.Find("finish_reason")->as_string(), "tool_calls");
}

TEST(OpenAiChoicesTest, OneChoiceKeepsTheSingleChoiceShape) {
  OpenAiApiReply reply = Reply(kText, false, false, 1);
  const char kFinal[] = R"(finish_reason: FINISH_REASON_STOP_STRING
                           usage { prompt_tokens: 4 generated_tokens: 1 })";
  const json::Value v = Completed(
      reply, 1,
      {Message(R"(delta { text: "abc" })"), Message(absl::StrCat("final { ", kFinal, " }"))});
  OpenAiReply openai(kText, "id-1", 5, "m", false);
  openai.set_system_fingerprint("fp_1");
  EXPECT_EQ(v, Parsed(openai.Complete("abc", "",
                                      Message(absl::StrCat("final { ", kFinal, " }")).final())));
  EXPECT_EQ(v.as_object().Find("choices")->as_array()[0].as_object().Find("tandem"), nullptr);
}

TEST(OpenAiChoicesTest, CompletionsLogprobsArePerChoice) {
  OpenAiApiReply reply = Reply(kText, false, true, 2);
  const json::Value v = Completed(reply, 2,
                                  {Message(R"(delta { text: "ab" token_ids: [1]
           logprobs { token { token_id: 1 logprob: -0.5 token_bytes: "ab" } } } choice_index: 1)"),
                                   Message(R"(delta { text: "c" token_ids: [2]
           logprobs { token { token_id: 2 logprob: -1 token_bytes: "c" } } } choice_index: 0)"),
                                   Message(R"(final { } choice_index: 0)"),
                                   Message(R"(final { request_usage { } } choice_index: 1)")});
  const json::Array& list = v.as_object().Find("choices")->as_array();
  ASSERT_EQ(list.size(), 2u);
  const json::Object& first = list[0].as_object().Find("logprobs")->as_object();
  const json::Object& second = list[1].as_object().Find("logprobs")->as_object();
  EXPECT_EQ(*first.Find("tokens"), Parsed(R"(["c"])"));
  EXPECT_EQ(*second.Find("tokens"), Parsed(R"(["ab"])"));
  // Each choice's offsets count from its own start.
  EXPECT_EQ(*first.Find("text_offset"), Parsed("[0]"));
  EXPECT_EQ(*second.Find("text_offset"), Parsed("[0]"));
}

TEST(OpenAiChoicesTest, StreamedChunksCarryTheirIndexAndUsageComesLast) {
  OpenAiApiReply reply = Reply(kChat, true, false, 2);
  const std::vector<json::Value> chunks = Streamed(reply, TwoChoices());
  // role 0, text 0, role 1, text 1, finish 1, text 0, finish 0, usage.
  ASSERT_EQ(chunks.size(), 8u);
  const struct {
    int64_t index;
    const char* delta;   // the delta's JSON
    const char* finish;  // null: none yet
  } kWant[] = {
      {0, R"({"role": "assistant", "content": ""})", nullptr},
      {0, R"({"content": "Hel"})", nullptr},
      {1, R"({"role": "assistant", "content": ""})", nullptr},
      {1, R"({"content": "Bye"})", nullptr},
      {1, "{}", "stop"},
      {0, R"({"content": "lo"})", nullptr},
      {0, "{}", "length"},
  };
  for (size_t i = 0; i < 7; ++i) {
    const json::Object& choice = chunks[i].as_object().Find("choices")->as_array()[0].as_object();
    EXPECT_EQ(choice.Find("index")->as_int(), kWant[i].index) << i;
    EXPECT_EQ(*choice.Find("delta"), Parsed(kWant[i].delta)) << i;
    if (kWant[i].finish == nullptr) {
      EXPECT_TRUE(choice.Find("finish_reason")->is_null()) << i;
    } else {
      EXPECT_EQ(choice.Find("finish_reason")->as_string(), kWant[i].finish) << i;
    }
    EXPECT_TRUE(chunks[i].as_object().Find("usage")->is_null()) << i;
  }
  for (const json::Value& chunk : chunks) {
    EXPECT_EQ(chunk.as_object().Find("system_fingerprint")->as_string(), "fp_1");
  }
  const json::Object& last = chunks[7].as_object();
  EXPECT_EQ(last.Find("object")->as_string(), "chat.completion.chunk");
  EXPECT_TRUE(last.Find("choices")->as_array().empty());
  EXPECT_EQ(*last.Find("usage"), Parsed(kRequestUsage));
  // Choice 0's speculation metrics, though choice 1's final came first.
  EXPECT_EQ(last.Find("metrics")
                ->as_object()
                .Find("speculative_decoding")
                ->as_object()
                .Find("num_draft_tokens")
                ->as_int(),
            4);
}

TEST(OpenAiChoicesTest, CompletionsStreamHasNoRoleChunks) {
  OpenAiApiReply reply = Reply(kText, false, false, 2);
  std::vector<int64_t> indexes;
  for (const json::Value& chunk : Streamed(reply, TwoChoices())) {
    indexes.push_back(
        chunk.as_object().Find("choices")->as_array()[0].as_object().Find("index")->as_int());
  }
  EXPECT_EQ(indexes, std::vector<int64_t>({0, 1, 1, 0, 0}));
}

TEST(OpenAiChoicesTest, StreamedLogprobsOffsetsRunPerChoice) {
  OpenAiApiReply reply = Reply(kText, false, true, 2);
  const std::vector<json::Value> chunks =
      Streamed(reply, {Message(R"(delta { text: "ab" token_ids: [1]
           logprobs { token { token_id: 1 logprob: -0.5 token_bytes: "ab" } } } choice_index: 0)"),
                       Message(R"(delta { text: "c" token_ids: [2]
           logprobs { token { token_id: 2 logprob: -1 token_bytes: "c" } } } choice_index: 1)")});
  ASSERT_EQ(chunks.size(), 2u);
  auto offsets = [](const json::Value& chunk) {
    return *chunk.as_object()
                .Find("choices")
                ->as_array()[0]
                .as_object()
                .Find("logprobs")
                ->as_object()
                .Find("text_offset");
  };
  EXPECT_EQ(offsets(chunks[0]), Parsed("[0]"));
  EXPECT_EQ(offsets(chunks[1]), Parsed("[0]"));
}

TEST(OpenAiChoicesTest, AnIndexOutsideTheChoicesIsIgnored) {
  OpenAiApiReply reply = Reply(kText, false, false, 2);
  EXPECT_TRUE(reply.Events(Message(R"(delta { text: "x" } choice_index: 2)")).empty());
  EXPECT_TRUE(reply.Events(Message(R"(delta { text: "x" } choice_index: -1)")).empty());
  std::vector<CollectedReply> choices(2);
  Collect(Message(R"(delta { text: "x" } choice_index: 2)"), choices);
  EXPECT_EQ(choices[0].text + choices[1].text, "");
}

}  // namespace
}  // namespace tandem
