#include "core/chat/tool_messages.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/base/json.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/chat/chat_template.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::ReadRepoFile;
using ::tandem::testing::ReadSharedFile;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// Messages from OpenAI-shaped JSON: role, content, and every other field as extra.
std::vector<ChatMessage> Messages(absl::string_view text) {
  absl::StatusOr<json::Value> parsed = json::Parse(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  std::vector<ChatMessage> messages;
  for (const json::Value& m : parsed->as_array()) {
    ChatMessage message;
    for (const auto& [key, value] : m.as_object()) {
      if (key == "role") {
        message.role = value.as_string();
      } else if (key == "content") {
        message.content = value;
      } else {
        message.extra.Set(key, value);
      }
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

const json::Value& Arguments(const ChatMessage& m) {
  return *m.extra.Find("tool_calls")
              ->as_array()[0]
              .as_object()
              .Find("function")
              ->as_object()
              .Find("arguments");
}

std::vector<ChatMessage> OneCall(absl::string_view arguments_json) {
  return Messages(std::string(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "call12345", "type": "function",
       "function": {"name": "get_weather", "arguments": )") +
                  std::string(arguments_json) + "}}]}]");
}

struct ArgumentsCase {
  const char* name;
  bool object_arguments;
  std::string arguments;  // as the request's JSON has it
  json::Value expected;
};

class PrepareArgumentsTest : public ::testing::TestWithParam<ArgumentsCase> {};

TEST_P(PrepareArgumentsTest, ConvertsArgumentsToTheShape) {
  const ArgumentsCase& c = GetParam();
  std::vector<ChatMessage> messages = OneCall(c.arguments);
  ASSERT_THAT(PrepareToolMessages({c.object_arguments, false}, &messages), IsOk());
  EXPECT_EQ(json::Serialize(Arguments(messages[0])), json::Serialize(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PrepareArgumentsTest,
    ::testing::Values(
        ArgumentsCase{"TextParsesToObject", true, R"("{\"city\":\"Paris\",\"n\":2}")",
                      json::Object{{"city", "Paris"}, {"n", 2}}},
        ArgumentsCase{"EmptyObjectText", true, R"("{}")", json::Object{}},
        ArgumentsCase{"UnparsableTextStays", true, R"("{\"city\": ")", "{\"city\": "},
        ArgumentsCase{"NonObjectTextStays", true, R"("[1, 2]")", "[1, 2]"},
        ArgumentsCase{"ObjectStays", true, R"({"city": "Paris"})", json::Object{{"city", "Paris"}}},
        ArgumentsCase{"TextStaysText", false, R"("{\"city\":\"Paris\"}")", "{\"city\":\"Paris\"}"},
        ArgumentsCase{"ObjectBecomesText", false, R"({"city": "Zürich", "n": [1]})",
                      "{\"city\": \"Zürich\", \"n\": [1]}"}),
    [](const ::testing::TestParamInfo<ArgumentsCase>& info) {
      return std::string(info.param.name);
    });

TEST(PrepareToolMessagesTest, NullContentOfACallBecomesEmptyOnlyWhenTheShapeSaysSo) {
  std::vector<ChatMessage> kept = OneCall(R"("{}")");
  ASSERT_THAT(PrepareToolMessages({true, false}, &kept), IsOk());
  EXPECT_TRUE(kept[0].content.is_null());
  std::vector<ChatMessage> emptied = OneCall(R"("{}")");
  ASSERT_THAT(PrepareToolMessages({true, true}, &emptied), IsOk());
  EXPECT_EQ(emptied[0].content, json::Value(""));
  // A plain assistant message keeps its null: only calls' messages are touched.
  std::vector<ChatMessage> plain = Messages(R"([{"role": "assistant", "content": null}])");
  ASSERT_THAT(PrepareToolMessages({true, true}, &plain), IsOk());
  EXPECT_TRUE(plain[0].content.is_null());
}

TEST(PrepareToolMessagesTest, DropsNullAndEmptyToolCallsAndAddsTheType) {
  std::vector<ChatMessage> messages = Messages(R"([
      {"role": "assistant", "content": "a", "tool_calls": null},
      {"role": "assistant", "content": "b", "tool_calls": []},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "x", "function": {"name": "f", "arguments": "{}"}}]}])");
  ASSERT_THAT(PrepareToolMessages({}, &messages), IsOk());
  EXPECT_FALSE(messages[0].extra.Contains("tool_calls"));
  EXPECT_FALSE(messages[1].extra.Contains("tool_calls"));
  EXPECT_EQ(json::Serialize(*messages[2].extra.Find("tool_calls")),
            R"([{"id": "x", "function": {"name": "f", "arguments": {}}, "type": "function"}])");
}

TEST(PrepareToolMessagesTest, ToolResultsPassThroughAndItIsIdempotent) {
  std::vector<ChatMessage> messages = Messages(R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345",
          "type": "function", "function": {"name": "w", "arguments": "{\"c\": 1}"}}]},
      {"role": "tool", "content": "{\"t\": 21}", "tool_call_id": "call12345", "name": "w"}])");
  ASSERT_THAT(PrepareToolMessages({}, &messages), IsOk());
  EXPECT_EQ(messages[2].content, json::Value("{\"t\": 21}"));
  EXPECT_EQ(json::Serialize(json::Value(messages[2].extra)),
            R"({"tool_call_id": "call12345", "name": "w"})");
  std::vector<ChatMessage> again = messages;
  ASSERT_THAT(PrepareToolMessages({}, &again), IsOk());
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(again[i].ToJson(), messages[i].ToJson()) << i;
  }
  EXPECT_TRUE(HasToolMessages(messages));
  EXPECT_FALSE(HasToolMessages(Messages(R"([{"role": "user", "content": "hi"}])")));
}

struct MalformedCase {
  const char* name;
  std::string messages;
  std::string error;
};

class MalformedToolCallsTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedToolCallsTest, AreInvalidArgumentNamingMessageAndField) {
  std::vector<ChatMessage> messages = Messages(GetParam().messages);
  EXPECT_THAT(PrepareToolMessages({}, &messages),
              StatusIs(absl::StatusCode::kInvalidArgument, GetParam().error));
}

constexpr char kUser[] = R"({"role": "user", "content": "hi"}, )";

INSTANTIATE_TEST_SUITE_P(
    Requests, MalformedToolCallsTest,
    ::testing::Values(
        MalformedCase{"NotAnArray",
                      std::string("[") + kUser + R"({"role": "assistant", "tool_calls": {}}])",
                      "messages[1].tool_calls: expected an array of tool calls"},
        MalformedCase{"OnAUserMessage", R"([{"role": "user", "content": "hi", "tool_calls": [1]}])",
                      "messages[0].tool_calls: only assistant messages make tool calls"},
        MalformedCase{"CallNotAnObject",
                      std::string("[") + kUser + R"({"role": "assistant", "tool_calls": [
                          {"function": {"name": "f", "arguments": "{}"}}, 7]}])",
                      "messages[1].tool_calls[1]: expected an object"},
        MalformedCase{"IdNotAString", R"([{"role": "assistant", "tool_calls": [
                          {"id": 5, "function": {"name": "f", "arguments": "{}"}}]}])",
                      "messages[0].tool_calls[0].id: expected a string"},
        MalformedCase{"TypeNotFunction", R"([{"role": "assistant", "tool_calls": [
                          {"type": "code", "function": {"name": "f", "arguments": "{}"}}]}])",
                      "messages[0].tool_calls[0].type: expected \"function\""},
        MalformedCase{"NoFunction", R"([{"role": "assistant", "tool_calls": [{"id": "a"}]}])",
                      "messages[0].tool_calls[0].function: expected an object with name and "
                      "arguments"},
        MalformedCase{"EmptyName", R"([{"role": "assistant", "tool_calls": [
                          {"function": {"name": "", "arguments": "{}"}}]}])",
                      "messages[0].tool_calls[0].function.name: expected a non-empty string"},
        MalformedCase{"NoArguments", R"([{"role": "assistant", "tool_calls": [
                          {"function": {"name": "f"}}]}])",
                      "messages[0].tool_calls[0].function.arguments: expected a JSON string or "
                      "object"},
        MalformedCase{"ArgumentsAnArray", R"([{"role": "assistant", "tool_calls": [
                          {"function": {"name": "f", "arguments": [1]}}]}])",
                      "messages[0].tool_calls[0].function.arguments: expected a JSON string or "
                      "object"},
        MalformedCase{"ToolCallIdNotAString",
                      R"([{"role": "tool", "content": "r", "tool_call_id": 12}])",
                      "messages[0].tool_call_id: expected a string"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) {
      return std::string(info.param.name);
    });

const json::Array& Tools() {
  static const json::Array* tools = new json::Array(json::Parse(R"([{"type": "function",
      "function": {"name": "get_weather", "description": "Get the current weather in a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string",
                                  "description": "The city"}}, "required": ["city"]}}}])")
                                                        ->as_array());
  return *tools;
}

absl::Time RenderTime() {
  return absl::FromCivil(absl::CivilSecond(2024, 7, 26, 0, 0, 0), absl::UTCTimeZone());
}

TEST(ToolTemplateContextTest, ToolsAndFirefunctionsVariables) {
  const json::Object context = ToolTemplateContext(Tools(), RenderTime());
  ASSERT_EQ(context.size(), 3u);
  EXPECT_EQ(*context.Find("tools"), json::Value(Tools()));
  json::SerializeOptions indented;
  indented.indent = 2;
  EXPECT_EQ(*context.Find("functions"),
            json::Value(json::Serialize(json::Value(Tools()), indented)));
  EXPECT_EQ(*context.Find("datetime"), json::Value("Jul 26 2024 00:00:00 GMT"));
}

TEST(ToolTemplateContextTest, WithoutToolsNoToolsVariable) {
  const json::Object context = ToolTemplateContext({}, RenderTime());
  EXPECT_FALSE(context.Contains("tools"));
  EXPECT_EQ(*context.Find("functions"), json::Value(""));
  EXPECT_EQ(*context.Find("datetime"), json::Value("Jul 26 2024 00:00:00 GMT"));
}

// Each shared tool-use template: the shape its family wants (see tool_messages.h), and the
// OpenAI-shaped three-turn conversation rendered through it exactly as Jinja2 renders the
// same conversation in that shape (testdata/tool_renders.json, make_tool_renders.py).
struct TemplateCase {
  const char* file;
  ToolCallShape shape;
};

ChatTemplateOptions FixedDateOptions() {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.time_zone = absl::UTCTimeZone();
  options.clock = [] { return RenderTime(); };
  return options;
}

absl::StatusOr<ChatTemplate> SharedTemplate(const std::string& file) {
  absl::StatusOr<std::string> source = ReadSharedFile("models/chat_templates/" + file);
  if (!source.ok()) return source.status();
  return ChatTemplate::Create(*source, FixedDateOptions());
}

absl::StatusOr<std::string> ExpectedRender(const std::string& file) {
  absl::StatusOr<std::string> text = ReadRepoFile("core/chat/testdata/tool_renders.json");
  if (!text.ok()) return text.status();
  absl::StatusOr<json::Value> doc = json::Parse(*text);
  if (!doc.ok()) return doc.status();
  const json::Value* render = doc->as_object().Find("renders")->as_object().Find(file);
  if (render == nullptr) return absl::NotFoundError("no expected render of " + file);
  return render->as_string();
}

class ToolTemplateTest : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(ToolTemplateTest, ProbeFindsTheShapeTheTemplateWants) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t, SharedTemplate(GetParam().file));
  const ToolCallShape shape = ProbeToolCallShape(t);
  EXPECT_EQ(shape.object_arguments, GetParam().shape.object_arguments);
  EXPECT_EQ(shape.empty_content, GetParam().shape.empty_content);
}

TEST_P(ToolTemplateTest, RendersTheToolConversationAsJinja2Does) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t, SharedTemplate(GetParam().file));
  std::vector<ChatMessage> messages = Messages(R"([
      {"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345",
          "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "content": "sunny, 21 C", "tool_call_id": "call12345"}])");
  ASSERT_THAT(PrepareToolMessages(ProbeToolCallShape(t), &messages), IsOk());
  ASSERT_OK_AND_ASSIGN(std::string prompt,
                       t.Render(messages, true, ToolTemplateContext(Tools(), RenderTime())));
  EXPECT_THAT(prompt, HasSubstr("get_weather"));
  EXPECT_THAT(prompt, HasSubstr("\"city\": \"Paris\""));
  EXPECT_THAT(prompt, HasSubstr("sunny, 21 C"));
  ASSERT_OK_AND_ASSIGN(std::string expected, ExpectedRender(GetParam().file));
  EXPECT_EQ(prompt, expected);
}

INSTANTIATE_TEST_SUITE_P(
    SharedTemplates, ToolTemplateTest,
    ::testing::Values(
        TemplateCase{"CohereForAI-c4ai-command-r-plus-tool_use.jinja", {true, true}},
        TemplateCase{"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", {true, false}},
        TemplateCase{"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", {false, false}},
        TemplateCase{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", {false, false}},
        TemplateCase{"Qwen-Qwen2.5-7B-Instruct.jinja", {true, false}},
        TemplateCase{"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", {false, false}},
        TemplateCase{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", {false, false}},
        TemplateCase{"fireworks-ai-llama-3-firefunction-v2.jinja", {false, false}},
        TemplateCase{"llama-cpp-deepseek-r1.jinja", {false, false}},
        TemplateCase{"meetkai-functionary-medium-v3.1.jinja", {false, false}},
        TemplateCase{"meetkai-functionary-medium-v3.2.jinja", {false, false}},
        TemplateCase{"meta-llama-Llama-3.1-8B-Instruct.jinja", {true, false}},
        TemplateCase{"meta-llama-Llama-3.2-3B-Instruct.jinja", {true, false}},
        TemplateCase{"meta-llama-Llama-3.3-70B-Instruct.jinja", {true, false}},
        TemplateCase{"mistralai-Mistral-Nemo-Instruct-2407.jinja", {true, false}}),
    [](const ::testing::TestParamInfo<TemplateCase>& info) {
      std::string name(info.param.file);
      name.resize(name.size() - 6);  // ".jinja"
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(ProbeToolCallShapeTest, TemplateWithoutCallsGetsTheDefault) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t,
                       ChatTemplate::Create("{% for m in messages %}{{ m.content }}{% endfor %}"));
  EXPECT_TRUE(ProbeToolCallShape(t) == ToolCallShape{});
}

}  // namespace
}  // namespace tandem::chat
