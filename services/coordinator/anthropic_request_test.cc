#include "services/coordinator/anthropic_request.h"

#include <ostream>
#include <string>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr AnthropicEndpoint kMessages = AnthropicEndpoint::kMessages;
constexpr AnthropicEndpoint kCount = AnthropicEndpoint::kCountTokens;

v1::GenerateRequest FromText(const std::string& text) {
  v1::GenerateRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

struct Converts {
  const char* name;
  AnthropicEndpoint endpoint;
  const char* body;
  const char* generate;  // the GenerateRequest in text format
};

void PrintTo(const Converts& c, std::ostream* os) { *os << c.name; }

const Converts kConverts[] = {
    {"StringContentAndSystemStringOpenTheConversation", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}],
         "system": "Be brief."})",
     R"(chat { messages { role: "system" content: "Be brief." }
               messages { role: "user" content: "Hi" } add_generation_prompt: true }
        max_tokens: 5)"},
    {"SystemTextBlocksAndTextBlocksAreJoined", kMessages,
     R"({"model": "m", "max_tokens": 5, "system": [{"type": "text", "text": "a",
         "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "b"}],
         "messages": [{"role": "user", "content": [{"type": "text", "text": "c"},
                                                   {"type": "text", "text": "d"}]}]})",
     R"(chat { messages { role: "system" content: "ab" } messages { role: "user" content: "cd" }
               add_generation_prompt: true } max_tokens: 5)"},
    {"SamplingStopsAndMetadata", kMessages,
     R"({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}],
         "temperature": 0, "top_p": 0.5, "top_k": 4, "stop_sequences": ["END", "\n\n"],
         "metadata": {"user_id": "u"}, "stream": false})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        max_tokens: 9 stop_strings: "END" stop_strings: "\n\n"
        sampling { temperature: 0 top_p: 0.5 top_k: 4 })"},
    {"ToolUseAndToolResultBecomeCallsAndToolMessages", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [
         {"role": "user", "content": "weather?"},
         {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": ""},
           {"type": "text", "text": "Let me look."},
           {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"city": "Paris"}}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
           "content": [{"type": "text", "text": "21C"}]}]}]})",
     R"(chat { messages { role: "user" content: "weather?" }
               messages { role: "assistant" content: "Let me look."
                          tool_calls { id: "toolu_1" name: "get" arguments: "{\"city\": \"Paris\"}" } }
               messages { role: "tool" content: "21C" tool_call_id: "toolu_1" }
               add_generation_prompt: true } max_tokens: 5)"},
    {"ToolResultsComeBeforeTheTurnsText", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "t", "content": "ok", "is_error": false},
         {"type": "text", "text": "and now?"}]}]})",
     R"(chat { messages { role: "tool" content: "ok" tool_call_id: "t" }
               messages { role: "user" content: "and now?" } add_generation_prompt: true }
        max_tokens: 5)"},
    {"ToolsAndToolChoiceAny", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
         "tools": [{"name": "get", "description": "d", "input_schema": {"type": "object"}}],
         "tool_choice": {"type": "any", "disable_parallel_tool_use": true}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true
               tools { name: "get" description: "d" parameters_json: "{\"type\": \"object\"}" } }
        max_tokens: 5 tool_choice { mode: MODE_REQUIRED } parallel_tool_calls: false)"},
    {"ToolChoiceToolNamesTheFunction", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
         "tools": [{"type": "custom", "name": "get", "input_schema": {}}],
         "tool_choice": {"type": "tool", "name": "get"}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true
               tools { name: "get" parameters_json: "{}" } }
        max_tokens: 5 tool_choice { mode: MODE_FUNCTION function: "get" })"},
    {"ToolChoiceAutoAndNone", kMessages,
     R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
         "tool_choice": {"type": "none"}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        max_tokens: 5 tool_choice { mode: MODE_NONE })"},
    {"CountTokensNeedsNoMaxTokens", kCount,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "system": "s"})",
     R"(chat { messages { role: "system" content: "s" } messages { role: "user" content: "x" }
               add_generation_prompt: true })"},
};

class ConvertsTest : public ::testing::TestWithParam<Converts> {};

TEST_P(ConvertsTest, GivesTheGenerateRequestAChatCompletionWouldGive) {
  const Converts& c = GetParam();
  absl::StatusOr<AnthropicRequest> r = ParseAnthropicRequest(c.body, c.endpoint);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
  const v1::GenerateRequest want = FromText(c.generate);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(r->generate, want))
      << "got:  " << r->generate.ShortDebugString() << "\nwant: " << want.ShortDebugString();
}

INSTANTIATE_TEST_SUITE_P(AnthropicRequest, ConvertsTest, ::testing::ValuesIn(kConverts),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(AnthropicRequestTest, StreamIsRead) {
  absl::StatusOr<AnthropicRequest> r = ParseAnthropicRequest(
      R"({"model": "m", "max_tokens": 1, "stream": true, "messages": [{"role": "user",
          "content": "x"}]})",
      kMessages);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stream);
}

struct Refuses {
  const char* name;
  AnthropicEndpoint endpoint;
  const char* body;
  const char* param;    // the field named (error.param)
  const char* message;  // a part of the kInvalidArgument message
};

void PrintTo(const Refuses& c, std::ostream* os) { *os << c.name; }

#define USER R"("messages": [{"role": "user", "content": "x"}])"

const Refuses kRefuses[] = {
    {"MaxTokensIsRequired", kMessages, R"({"model": "m", )" USER "}", "max_tokens",
     "max_tokens: is required"},
    {"MaxTokensAtLeastOne", kMessages, R"({"model": "m", "max_tokens": 0, )" USER "}", "max_tokens",
     "outside [1, "},
    {"ModelIsRequired", kMessages, R"({"max_tokens": 1, )" USER "}", "model", "is required"},
    {"MessagesAreRequired", kMessages, R"({"model": "m", "max_tokens": 1})", "messages",
     "is required"},
    {"ThinkingIsRefused", kMessages,
     R"({"model": "m", "max_tokens": 1, "thinking": {"type": "enabled"}, )" USER "}", "thinking",
     "thinking: is not supported by Tandem's Anthropic-compatible API"},
    {"ImagesAreRefused", kMessages,
     R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
         {"type": "image", "source": {}}]}]})",
     "messages[0].content[0]", "block of type 'image'"},
    {"ASystemRoleIsRefused", kMessages,
     R"({"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": "x"}]})",
     "messages[0].role", "is not 'user' or 'assistant'"},
    {"ToolUseOnlyFromTheAssistant", kMessages,
     R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
         {"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]})",
     "messages[0].content[0]", "user block of type 'tool_use'"},
    {"ServerToolsAreRefused", kMessages,
     R"({"model": "m", "max_tokens": 1, "tools": [{"type": "web_search_20250305",
         "name": "web_search"}], )" USER "}",
     "tools[0].type", "client tools only"},
    {"AToolNeedsItsSchema", kMessages,
     R"({"model": "m", "max_tokens": 1, "tools": [{"name": "f"}], )" USER "}",
     "tools[0].input_schema", "is required"},
    {"ToolNamesAreUnique", kMessages,
     R"({"model": "m", "max_tokens": 1, "tools": [{"name": "f", "input_schema": {}},
         {"name": "f", "input_schema": {}}], )" USER "}",
     "tools[1].name", "'f' is not unique"},
    {"ToolChoiceToolNeedsAName", kMessages,
     R"({"model": "m", "max_tokens": 1, "tool_choice": {"type": "tool"}, )" USER "}",
     "tool_choice.name", "is required"},
    {"AnUnknownToolChoice", kMessages,
     R"({"model": "m", "max_tokens": 1, "tool_choice": {"type": "all"}, )" USER "}",
     "tool_choice.type", "'all' is not 'auto', 'any', 'tool' or 'none'"},
    {"TemperatureWrongType", kMessages,
     R"({"model": "m", "max_tokens": 1, "temperature": "hot", )" USER "}", "temperature",
     "expected a number, got string"},
    {"AnEmptyStopSequence", kMessages,
     R"({"model": "m", "max_tokens": 1, "stop_sequences": [""], )" USER "}", "stop_sequences[0]",
     "is empty"},
    {"CountTokensTakesNoMaxTokens", kCount, R"({"model": "m", "max_tokens": 1, )" USER "}",
     "max_tokens", "is not supported"},
    {"AnUnknownMessageField", kMessages,
     R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x",
         "name": "a"}]})",
     "messages[0].name", "is not supported"},
};

#undef USER

class RefusesTest : public ::testing::TestWithParam<Refuses> {};

TEST_P(RefusesTest, WithInvalidArgumentNamingTheField) {
  const Refuses& c = GetParam();
  const absl::Status status = ParseAnthropicRequest(c.body, c.endpoint).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  EXPECT_EQ(openai::ErrorParam(status).value_or("<none>"), c.param);
}

INSTANTIATE_TEST_SUITE_P(AnthropicRequest, RefusesTest, ::testing::ValuesIn(kRefuses),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(AnthropicRequestTest, MalformedJsonIsRefused) {
  EXPECT_THAT(ParseAnthropicRequest(R"({"model": )", kMessages).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the body is not JSON")));
}

}  // namespace
}  // namespace tandem
