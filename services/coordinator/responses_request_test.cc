#include "services/coordinator/responses_request.h"

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

v1::GenerateRequest FromText(const std::string& text) {
  v1::GenerateRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

struct Converts {
  const char* name;
  const char* body;
  const char* generate;  // the GenerateRequest in text format
};

void PrintTo(const Converts& c, std::ostream* os) { *os << c.name; }

const Converts kConverts[] = {
    {"AStringInputIsOneUserMessageAfterTheInstructions",
     R"({"model": "m", "input": "Hi", "instructions": "Be brief.", "max_output_tokens": 7,
         "temperature": 0, "top_p": 0.5, "store": false, "metadata": {"a": "b"}})",
     R"(chat { messages { role: "system" content: "Be brief." }
               messages { role: "user" content: "Hi" } add_generation_prompt: true }
        max_tokens: 7 sampling { temperature: 0 top_p: 0.5 })"},
    {"MessageItemsWithTextPartsDeveloperAsSystem",
     R"({"model": "m", "input": [{"role": "developer", "content": "d"},
         {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                          {"type": "input_text", "text": "b"}]},
         {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
          "content": [{"type": "output_text", "text": "c", "annotations": []}]}]})",
     R"(chat { messages { role: "system" content: "d" } messages { role: "user" content: "ab" }
               messages { role: "assistant" content: "c" } add_generation_prompt: true })"},
    {"FunctionCallsJoinOneAssistantTurnAndOutputsAreToolMessages",
     R"({"model": "m", "input": [{"role": "user", "content": "x"},
         {"type": "reasoning", "id": "rs_1", "summary": []},
         {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}",
          "status": "completed"},
         {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"a\":1}"},
         {"type": "function_call_output", "call_id": "c1", "output": "one"},
         {"type": "function_call_output", "call_id": "c2", "output": "two"}]})",
     R"(chat { messages { role: "user" content: "x" }
               messages { role: "assistant" tool_calls { id: "c1" name: "f" arguments: "{}" }
                          tool_calls { id: "c2" name: "g" arguments: "{\"a\":1}" } }
               messages { role: "tool" content: "one" tool_call_id: "c1" }
               messages { role: "tool" content: "two" tool_call_id: "c2" }
               add_generation_prompt: true })"},
    {"CallsAfterTheAssistantsTextAreItsTurn",
     R"({"model": "m", "input": [{"role": "user", "content": "x"},
         {"role": "assistant", "content": "Let me look."},
         {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
         {"type": "function_call_output", "call_id": "c1", "output": "one"}]})",
     R"(chat { messages { role: "user" content: "x" }
               messages { role: "assistant" content: "Let me look."
                          tool_calls { id: "c1" name: "f" arguments: "{}" } }
               messages { role: "tool" content: "one" tool_call_id: "c1" }
               add_generation_prompt: true })"},
    {"FlatFunctionToolsAndToolChoice",
     R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f",
         "description": "d", "parameters": {"type": "object"}, "strict": true}],
         "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true
               tools { name: "f" description: "d" parameters_json: "{\"type\": \"object\"}" } }
        tool_choice { mode: MODE_FUNCTION function: "f" } parallel_tool_calls: false)"},
    {"ToolChoiceRequired", R"({"model": "m", "input": "x", "tool_choice": "required"})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        tool_choice { mode: MODE_REQUIRED })"},
    {"TextFormatJsonSchemaIsFlat",
     R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "s",
         "schema": {"type": "object"}, "strict": true}}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        constraint { json_schema { schema: "{\"type\":\"object\"}" } })"},
    {"TextFormatJsonObject",
     R"({"model": "m", "input": "x", "text": {"format": {"type": "json_object"}}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        constraint { json_object {} })"},
    {"TextFormatTextIsNoConstraint",
     R"({"model": "m", "input": "x", "text": {"format": {"type": "text"}}, "truncation":
         "disabled", "include": [], "user": "u", "top_logprobs": 0, "background": false})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true })"},
};

class ConvertsTest : public ::testing::TestWithParam<Converts> {};

TEST_P(ConvertsTest, GivesTheGenerateRequestAChatCompletionWouldGive) {
  const Converts& c = GetParam();
  absl::StatusOr<ResponsesRequest> r = ParseResponsesRequest(c.body);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
  const v1::GenerateRequest want = FromText(c.generate);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(r->generate, want))
      << "got:  " << r->generate.ShortDebugString() << "\nwant: " << want.ShortDebugString();
}

INSTANTIATE_TEST_SUITE_P(ResponsesRequest, ConvertsTest, ::testing::ValuesIn(kConverts),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ResponsesRequestTest, EchoedFieldsAreKeptAsSent) {
  absl::StatusOr<ResponsesRequest> r = ParseResponsesRequest(
      R"({"model": "m", "input": "x", "stream": true, "instructions": "i",
          "max_output_tokens": 3, "tool_choice": "none", "temperature": 0.5})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->instructions, json::Value("i"));
  EXPECT_EQ(r->max_output_tokens, json::Value(3));
  EXPECT_EQ(r->tool_choice, json::Value("none"));
  EXPECT_EQ(r->temperature, json::Value(0.5));
  EXPECT_TRUE(r->top_p.is_null());
}

struct Refuses {
  const char* name;
  const char* body;
  const char* param;    // the field named (error.param)
  const char* message;  // a part of the kInvalidArgument message
};

void PrintTo(const Refuses& c, std::ostream* os) { *os << c.name; }

const Refuses kRefuses[] = {
    {"PreviousResponseIdNeedsState", R"({"model": "m", "input": "x",
       "previous_response_id": "resp_1"})",
     "previous_response_id", "stores no response"},
    {"ConversationNeedsState", R"({"model": "m", "input": "x", "conversation": "c"})",
     "conversation", "stores no response"},
    {"StoreTrue", R"({"model": "m", "input": "x", "store": true})", "store", "nothing is stored"},
    {"Background", R"({"model": "m", "input": "x", "background": true})", "background",
     "no background mode"},
    {"BuiltInTools", R"({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})",
     "tools[0].type", "the built-in tool 'web_search'"},
    {"Reasoning", R"({"model": "m", "input": "x", "reasoning": {"effort": "low"}})", "reasoning",
     "field 'reasoning' is not supported"},
    {"InputImages", R"({"model": "m", "input": [{"role": "user", "content": [
       {"type": "input_image", "image_url": "x"}]}]})",
     "input[0].content[0]", "of type 'input_image'"},
    {"UnknownItemType", R"({"model": "m", "input": [{"type": "item_reference", "id": "x"}]})",
     "input[0].type", "of type 'item_reference'"},
    {"InputIsRequired", R"({"model": "m"})", "input", "is required"},
    {"ModelIsRequired", R"({"input": "x"})", "model", "is required"},
    {"FunctionCallNeedsCallId", R"({"model": "m", "input": [{"type": "function_call",
       "name": "f", "arguments": "{}"}]})",
     "input[0].call_id", "is required"},
    {"AToolNeedsAName", R"({"model": "m", "input": "x", "tools": [{"type": "function"}]})",
     "tools[0].name", "is required"},
    {"TextFormatJsonSchemaNeedsAName", R"({"model": "m", "input": "x", "text": {"format":
       {"type": "json_schema", "schema": {}}}})",
     "text.format.name", "is required"},
    {"TextFormatUnknownType", R"({"model": "m", "input": "x", "text": {"format":
       {"type": "yaml"}}})",
     "text.format.type", "'yaml' is not"},
    {"MaxOutputTokensAtLeastOne", R"({"model": "m", "input": "x", "max_output_tokens": 0})",
     "max_output_tokens", "outside [1, "},
    {"AnUnknownRole", R"({"model": "m", "input": [{"role": "tool", "content": "x"}]})",
     "input[0].role", "'tool' is not"},
};

class RefusesTest : public ::testing::TestWithParam<Refuses> {};

TEST_P(RefusesTest, WithInvalidArgumentNamingTheField) {
  const Refuses& c = GetParam();
  const absl::Status status = ParseResponsesRequest(c.body).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  EXPECT_EQ(openai::ErrorParam(status).value_or("<none>"), c.param);
}

INSTANTIATE_TEST_SUITE_P(ResponsesRequest, RefusesTest, ::testing::ValuesIn(kRefuses),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
