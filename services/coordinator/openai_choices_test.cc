// The shapes of an OpenAI reply of several choices (openai_choices.h): the "choices" array of
// a reply that is not streamed, the chunks of a streamed one (each with its choice's index,
// its own role chunk and finish reason, the usage once at the end), the usage counting the
// prompt once, and `n` as the param of the coordinator's refusal.
#include "services/coordinator/openai_choices.h"

#include <string>
#include <vector>

#include "core/base/json.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

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
                         request_usage { prompt_tokens: 20 generated_tokens: 5 } }
                 choice_index: 0)"),
  };
}

TEST(OpenAiChoicesTest, ChatReplyHasOneChoicePerIndexAndTheRequestsUsage) {
  const OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 5, "m", false);
  OpenAiChoices choices(OpenAiEndpoint::kChatCompletions, 2, false);
  for (const v1::GenerateResponse& m : TwoChoices()) choices.Add(m);
  const json::Value v = Parsed(choices.Reply(reply));
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
  EXPECT_EQ(*v.as_object().Find("usage"), Parsed(kRequestUsage));
  EXPECT_EQ(v.as_object().Find("tandem")->as_object().Find("seed")->as_int(), 7);
}

TEST(OpenAiChoicesTest, OneChoiceKeepsTheSingleChoiceShape) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "cmpl-1", 5, "m", false);
  OpenAiChoices choices(OpenAiEndpoint::kCompletions, 1, false);
  choices.Add(Message(R"(delta { text: "abc" })"));
  choices.Add(Message(R"(final { finish_reason: FINISH_REASON_STOP_STRING
                                 usage { prompt_tokens: 4 generated_tokens: 1 } })"));
  const v1::GenerationResult result = Message(R"(final { finish_reason: FINISH_REASON_STOP_STRING
      usage { prompt_tokens: 4 generated_tokens: 1 } })")
                                          .final();
  EXPECT_EQ(Parsed(choices.Reply(reply)), Parsed(reply.Complete("abc", "", result)));
}

TEST(OpenAiChoicesTest, CompletionsLogprobsArePerChoice) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "cmpl-1", 5, "m", false);
  OpenAiChoices choices(OpenAiEndpoint::kCompletions, 2, true);
  choices.Add(Message(R"(delta { text: "ab" token_ids: [1]
      logprobs { token { token_id: 1 logprob: -0.5 token_bytes: "ab" } } } choice_index: 1)"));
  choices.Add(Message(R"(delta { text: "c" token_ids: [2]
      logprobs { token { token_id: 2 logprob: -1 token_bytes: "c" } } } choice_index: 0)"));
  choices.Add(Message(R"(final { } choice_index: 0)"));
  choices.Add(Message(R"(final { request_usage { } } choice_index: 1)"));
  const json::Value v = Parsed(choices.Reply(reply));
  const json::Array& list = v.as_object().Find("choices")->as_array();
  ASSERT_EQ(list.size(), 2u);
  const json::Object& first = list[0].as_object().Find("logprobs")->as_object();
  const json::Object& second = list[1].as_object().Find("logprobs")->as_object();
  EXPECT_EQ(*first.Find("tokens"), Parsed(R"(["c"])"));
  EXPECT_EQ(*second.Find("tokens"), Parsed(R"(["ab"])"));
  // Each choice's offsets count from its own start.
  EXPECT_EQ(*second.Find("text_offset"), Parsed("[0]"));
}

TEST(OpenAiChoicesTest, StreamedChunksCarryTheirIndexAndUsageComesLast) {
  const OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "c", 5, "m", true);
  OpenAiStreamEvents events(reply, 2, false);
  std::vector<json::Value> chunks;
  for (const v1::GenerateResponse& m : TwoChoices()) {
    for (const std::string& e : events.Of(m)) chunks.push_back(Parsed(e));
  }
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
  const json::Object& last = chunks[7].as_object();
  EXPECT_EQ(last.Find("object")->as_string(), "chat.completion.chunk");
  EXPECT_TRUE(last.Find("choices")->as_array().empty());
  EXPECT_EQ(*last.Find("usage"), Parsed(kRequestUsage));
}

TEST(OpenAiChoicesTest, CompletionsStreamHasNoRoleChunks) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "c", 5, "m", false);
  OpenAiStreamEvents events(reply, 2, false);
  std::vector<int64_t> indexes;
  for (const v1::GenerateResponse& m : TwoChoices()) {
    for (const std::string& e : events.Of(m)) {
      const json::Value v = Parsed(e);
      indexes.push_back(
          v.as_object().Find("choices")->as_array()[0].as_object().Find("index")->as_int());
    }
  }
  EXPECT_EQ(indexes, std::vector<int64_t>({0, 1, 1, 0, 0}));
}

TEST(OpenAiChoicesTest, AnIndexOutsideTheChoicesIsIgnored) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "c", 5, "m", false);
  OpenAiStreamEvents events(reply, 2, false);
  EXPECT_TRUE(events.Of(Message(R"(delta { text: "x" } choice_index: 2)")).empty());
  EXPECT_TRUE(events.Of(Message(R"(delta { text: "x" } choice_index: -1)")).empty());
}

TEST(OpenAiChoicesParamTest, KeepsTheMessageAndNamesN) {
  const absl::Status status =
      OpenAiChoicesParam(absl::InvalidArgumentError("n is 9 choices; the limit is 8"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "n is 9 choices; the limit is 8");
  EXPECT_EQ(openai::ErrorParam(status).value_or("<none>"), "n");
}

}  // namespace
}  // namespace tandem
