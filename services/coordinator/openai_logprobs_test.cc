#include "services/coordinator/openai_logprobs.h"

#include <string>

#include "core/base/json.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using Tokens = google::protobuf::RepeatedPtrField<v1::TokenLogprobs>;

// Two tokens: " the" (with two alternatives) and the first two bytes of "€" (not a whole
// character: its text is U+FFFD, its bytes exact).
Tokens TwoTokens() {
  v1::TokenDelta delta;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(logprobs { token { token_id: 5 logprob: -0.5 token_bytes: " the" }
                    top { token_id: 5 logprob: -0.5 token_bytes: " the" }
                    top { token_id: 9 logprob: -1.25 token_bytes: "é" } }
         logprobs { token { token_id: 7 logprob: -2 token_bytes: "\342\202" } })",
      &delta));
  return delta.logprobs();
}

json::Value Parsed(const std::string& text) {
  absl::StatusOr<json::Value> v = json::Parse(text);
  EXPECT_TRUE(v.ok()) << v.status() << ": " << text;
  return v.ok() ? *v : json::Value();
}

TEST(OpenAiLogprobsTest, ChatHasOpenAisContentShape) {
  OpenAiLogprobs logprobs(OpenAiEndpoint::kChatCompletions);
  const json::Value got = logprobs.Of(TwoTokens());
  const json::Value want = Parsed(R"({"content": [
      {"token": " the", "logprob": -0.5, "bytes": [32, 116, 104, 101],
       "top_logprobs": [{"token": " the", "logprob": -0.5, "bytes": [32, 116, 104, 101]},
                        {"token": "\u00e9", "logprob": -1.25, "bytes": [195, 169]}]},
      {"token": "\ufffd", "logprob": -2, "bytes": [226, 130], "top_logprobs": []}],
      "refusal": null})");
  EXPECT_EQ(got, want) << json::Serialize(got);
}

TEST(OpenAiLogprobsTest, CompletionHasParallelListsAndOffsetsRunOnAcrossChunks) {
  OpenAiLogprobs logprobs(OpenAiEndpoint::kCompletions);
  const json::Value first = logprobs.Of(TwoTokens());
  const json::Value want = Parsed(R"({"tokens": [" the", "\ufffd"], "token_logprobs": [-0.5, -2],
      "top_logprobs": [{" the": -0.5, "\u00e9": -1.25}, {}], "text_offset": [0, 4]})");
  EXPECT_EQ(first, want) << json::Serialize(first);
  // The next chunk's offsets continue after " the" (4) and U+FFFD (1 code point).
  const json::Value second = logprobs.Of(TwoTokens());
  ASSERT_TRUE(second.is_object());
  EXPECT_EQ(*second.as_object().Find("text_offset"), Parsed("[5, 9]"));
}

TEST(OpenAiLogprobsTest, NoTokensGiveEmptyLists) {
  OpenAiLogprobs chat(OpenAiEndpoint::kChatCompletions);
  EXPECT_EQ(chat.Of(Tokens()), Parsed(R"({"content": [], "refusal": null})"));
  OpenAiLogprobs text(OpenAiEndpoint::kCompletions);
  EXPECT_EQ(text.Of(Tokens()), Parsed(R"({"tokens": [], "token_logprobs": [],
      "top_logprobs": [], "text_offset": []})"));
}

}  // namespace
}  // namespace tandem
