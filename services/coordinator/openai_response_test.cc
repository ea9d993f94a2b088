#include "services/coordinator/openai_response.h"

#include <string>

#include "core/base/json.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

v1::GenerationResult Result(const std::string& text) {
  v1::GenerationResult r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

const char kLength[] = R"(finish_reason: FINISH_REASON_LENGTH
  usage { prompt_tokens: 10 cached_prompt_tokens: 4 generated_tokens: 3 }
  speculation { rounds: 2 drafted_tokens: 8 accepted_tokens: 6 acceptance_rate: 0.75
                tokens_per_round: 1.5 accepted_per_position: [2, 2, 1, 1] final_draft_tokens: 4
                pipelined: true ahead_drafts: 2 predrafted_rounds: 1 forced_tokens: 5 }
  timing { total_seconds: 0.5 } session_id: "oneoff-3" seed: 77)";

json::Value Parsed(const std::string& text) {
  absl::StatusOr<json::Value> v = json::Parse(text);
  EXPECT_TRUE(v.ok()) << v.status() << ": " << text;
  return v.ok() ? *v : json::Value();
}

v1::GenerationResult Reason(v1::FinishReason reason) {
  v1::GenerationResult r;
  r.set_finish_reason(reason);
  return r;
}

TEST(OpenAiFinishReasonTest, StopForStopsLengthForLimits) {
  EXPECT_STREQ(OpenAiFinishReason(Reason(v1::FINISH_REASON_STOP_TOKEN)), "stop");
  EXPECT_STREQ(OpenAiFinishReason(Reason(v1::FINISH_REASON_STOP_STRING)), "stop");
  EXPECT_STREQ(OpenAiFinishReason(Reason(v1::FINISH_REASON_LENGTH)), "length");
  EXPECT_STREQ(OpenAiFinishReason(Reason(v1::FINISH_REASON_CONTEXT_FULL)), "length");
}

TEST(OpenAiReplyTest, ChatCompletionCarriesMessageUsageAndTandemStatistics) {
  const OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 1700000000, "stories",
                          false);
  const json::Value v = Parsed(reply.Complete("Hello", "", Result(kLength)));
  const json::Value want = Parsed(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "stories",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"},
                 "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13,
              "prompt_tokens_details": {"cached_tokens": 4},
              "completion_tokens_details": {"accepted_prediction_tokens": 0,
                                            "rejected_prediction_tokens": 0}},
    "metrics": {"speculative_decoding": {"mean_acceptance_length": 4.0,
                                         "draft_acceptance_rate": 0.75,
                                         "acceptance_histogram": [0, 0, 1, 0, 1],
                                         "num_spec_steps": 2, "num_draft_tokens": 8,
                                         "num_accepted_draft_tokens": 6, "num_spec_tokens": 4}},
    "tandem": {"session_id": "oneoff-3", "seed": 77,
               "speculation": {"rounds": 2, "drafted_tokens": 8, "accepted_tokens": 6,
                               "acceptance_rate": 0.75, "tokens_per_round": 1.5,
                               "accepted_per_position": [2, 2, 1, 1], "draft_failed": false,
                               "final_draft_tokens": 4, "pipelined": true,
                               "predrafted_rounds": 1, "forced_tokens": 5,
                               "forced_accepted_tokens": 0, "predicted_tokens": 0,
                               "predicted_accepted_tokens": 0, "predicted_rounds": 0},
               "timing": {"prefill_seconds": 0, "decode_seconds": 0,
                          "time_to_first_token_seconds": 0, "total_seconds": 0.5,
                          "decode_tokens_per_second": 0}}})");
  EXPECT_EQ(v, want) << json::Serialize(v);
}

TEST(OpenAiReplyTest, TextCompletionCarriesText) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "cmpl-1", 5, "m", false);
  const json::Value v =
      Parsed(reply.Complete("abc", "", Result("finish_reason: FINISH_REASON_STOP_STRING")));
  EXPECT_EQ(v.as_object().Find("object")->as_string(), "text_completion");
  const json::Object& choice = v.as_object().Find("choices")->as_array()[0].as_object();
  EXPECT_EQ(choice.Find("text")->as_string(), "abc");
  EXPECT_EQ(choice.Find("finish_reason")->as_string(), "stop");
}

TEST(OpenAiReplyTest, ChatChunksAreRoleTextFinishThenUsage) {
  const OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "c", 5, "m", true);
  EXPECT_EQ(Parsed(reply.RoleChunk()), Parsed(R"({"id": "c", "object": "chat.completion.chunk",
      "created": 5, "model": "m", "choices": [{"index": 0,
      "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}],
      "usage": null})"));
  EXPECT_EQ(Parsed(reply.TextChunk("Hi")), Parsed(R"({"id": "c", "object": "chat.completion.chunk",
      "created": 5, "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"},
      "logprobs": null, "finish_reason": null}], "usage": null})"));
  const json::Value finish = Parsed(reply.FinishChunk(Result(kLength)));
  const json::Object& choice = finish.as_object().Find("choices")->as_array()[0].as_object();
  EXPECT_EQ(choice.Find("delta")->as_object().size(), 0u);
  EXPECT_EQ(choice.Find("finish_reason")->as_string(), "length");
  EXPECT_EQ(finish.as_object().Find("tandem")->as_object().Find("seed")->as_int(), 77);
  EXPECT_EQ(Parsed(reply.UsageChunk(Result(kLength))),
            Parsed(R"({"id": "c", "object": "chat.completion.chunk", "created": 5, "model": "m",
      "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13,
      "prompt_tokens_details": {"cached_tokens": 4},
      "completion_tokens_details": {"accepted_prediction_tokens": 0,
                                    "rejected_prediction_tokens": 0}},
      "metrics": {"speculative_decoding": {"mean_acceptance_length": 4.0,
                                           "draft_acceptance_rate": 0.75,
                                           "acceptance_histogram": [0, 0, 1, 0, 1],
                                           "num_spec_steps": 2, "num_draft_tokens": 8,
                                           "num_accepted_draft_tokens": 6,
                                           "num_spec_tokens": 4}}})"));
}

TEST(OpenAiReplyTest, ChunksWithoutIncludeUsageHaveNoUsageField) {
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "c", 5, "m", false);
  const json::Value v = Parsed(reply.TextChunk("x"));
  EXPECT_FALSE(v.as_object().Contains("usage"));
  EXPECT_EQ(v.as_object().Find("object")->as_string(), "text_completion");
  EXPECT_EQ(v.as_object().Find("choices")->as_array()[0].as_object().Find("text")->as_string(),
            "x");
}

TEST(OpenAiReplyTest, NonFiniteStatisticsBecomeZero) {
  v1::GenerationResult r;
  r.mutable_speculation()->set_acceptance_rate(std::numeric_limits<double>::quiet_NaN());
  const OpenAiReply reply(OpenAiEndpoint::kCompletions, "c", 5, "m", false);
  const json::Value v = Parsed(reply.Complete("", "", r));
  EXPECT_EQ(v.as_object()
                .Find("tandem")
                ->as_object()
                .Find("speculation")
                ->as_object()
                .Find("acceptance_rate")
                ->as_double(),
            0.0);
}

TEST(OpenAiReplyTest, TheChoiceCarriesTheLogprobsGiven) {
  const OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "c", 5, "m", false);
  const json::Value logprobs = json::Object{{"content", json::Array{}}, {"refusal", nullptr}};
  for (const std::string& text :
       {reply.TextChunk("x", logprobs), reply.Complete("x", "", {}, logprobs)}) {
    const json::Value v = Parsed(text);
    EXPECT_EQ(*v.as_object().Find("choices")->as_array()[0].as_object().Find("logprobs"), logprobs)
        << text;
  }
}

}  // namespace
TEST(OpenAiReplyTest, ToolCallsMakeMessageToolCallsWithNullContent) {
  OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 7, "m", false);
  const json::Value v = Parsed(reply.Complete("", "Let me look.", Result(R"(
      finish_reason: FINISH_REASON_STOP_TOKEN
      tool_calls { id: "call_a" name: "get_weather" arguments: "{\"city\": \"Paris\"}" })")));
  const json::Value& choice = v.as_object().Find("choices")->as_array()[0];
  EXPECT_EQ(json::Serialize(choice),
            R"({"index": 0, "message": {"role": "assistant", "content": null, )"
            R"("reasoning_content": "Let me look.", "tool_calls": [{"id": "call_a", )"
            R"("type": "function", "function": {"name": "get_weather", )"
            R"("arguments": "{\"city\": \"Paris\"}"}}]}, "logprobs": null, )"
            R"("finish_reason": "tool_calls"})");
}

TEST(OpenAiReplyTest, DeltaChunkStreamsCallsAsOpenAiDoes) {
  OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 7, "m", false);
  v1::TokenDelta first;
  first.set_reasoning_text("hm");
  v1::ToolCallDelta* call = first.add_tool_calls();
  call->set_index(0);
  call->set_id("call_a");
  call->set_name("f");
  call->set_arguments("{\"a\"");
  v1::TokenDelta later;
  later.add_tool_calls()->set_arguments(": 1}");
  const json::Value a = Parsed(reply.DeltaChunk(first));
  const json::Value b = Parsed(reply.DeltaChunk(later));
  EXPECT_EQ(json::Serialize(*a.as_object().Find("choices")->as_array()[0].as_object().Find("delta")),
            R"({"reasoning_content": "hm", "tool_calls": [{"index": 0, "id": "call_a", )"
            R"("type": "function", "function": {"name": "f", "arguments": "{\"a\""}}]})");
  EXPECT_EQ(json::Serialize(*b.as_object().Find("choices")->as_array()[0].as_object().Find("delta")),
            R"({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]})");
}

}  // namespace tandem
