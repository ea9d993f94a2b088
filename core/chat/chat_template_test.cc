#include "core/chat/chat_template.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::ReadSharedFile;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kTemplateDir[] = "models/chat_templates/";

// The date the expected renders were made with (strftime_now fixed to 26 Jul 2024).
ChatTemplateOptions FixedDateOptions(std::string bos, std::string eos) {
  ChatTemplateOptions options;
  options.bos_token = std::move(bos);
  options.eos_token = std::move(eos);
  options.time_zone = absl::UTCTimeZone();
  options.clock = [] {
    return absl::FromCivil(absl::CivilSecond(2024, 7, 26, 12, 0, 0), absl::UTCTimeZone());
  };
  return options;
}

// One expected render: template x conversation x add_generation_prompt.
struct RenderCase {
  std::string template_file;
  std::string conversation;
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  json::Value messages;
  std::string expected;
  std::string load_error;  // set when the shared file could not be read: the case fails
};

std::vector<RenderCase> LoadRenderCases() {
  absl::StatusOr<std::string> text = ReadSharedFile("models/chat_templates/expected_renders.json");
  absl::StatusOr<json::Value> doc =
      text.ok() ? json::Parse(*text) : absl::StatusOr<json::Value>(text.status());
  if (!doc.ok() || !doc->is_object()) {
    RenderCase missing;
    missing.template_file = "expected_renders_json";
    missing.load_error =
        doc.ok() ? "expected_renders.json is not an object" : std::string(doc.status().ToString());
    return {missing};
  }
  std::vector<RenderCase> cases;
  const json::Object& conversations = doc->as_object().Find("conversations")->as_object();
  for (const auto& [file, renders] : doc->as_object().Find("renders")->as_object()) {
    for (const auto& [conversation, messages] : conversations) {
      for (bool flag : {true, false}) {
        RenderCase c;
        c.template_file = file;
        c.conversation = conversation;
        c.add_generation_prompt = flag;
        c.bos_token = renders.as_object().Find("bos_token")->as_string();
        c.eos_token = renders.as_object().Find("eos_token")->as_string();
        c.messages = messages;
        const json::Value* expected = renders.as_object().Find(
            absl::StrCat(conversation, "|add_generation_prompt=", flag ? "True" : "False"));
        if (expected == nullptr) {
          c.load_error = "no expected render for this case";
        } else {
          c.expected = expected->as_string();
        }
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<RenderCase>& info) {
  std::string name = absl::StrCat(info.param.template_file, "_", info.param.conversation,
                                  info.param.add_generation_prompt ? "_gen" : "_nogen");
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class ExpectedRenderTest : public ::testing::TestWithParam<RenderCase> {};

TEST_P(ExpectedRenderTest, RendersByteForByte) {
  const RenderCase& c = GetParam();
  ASSERT_EQ(c.load_error, "");
  ASSERT_OK_AND_ASSIGN(std::string source, ReadSharedFile(kTemplateDir + c.template_file));
  ASSERT_OK_AND_ASSIGN(ChatTemplate t,
                       ChatTemplate::Create(source, FixedDateOptions(c.bos_token, c.eos_token)));
  EXPECT_THAT(t.Render(c.messages, c.add_generation_prompt), IsOkAndHolds(c.expected));
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, ExpectedRenderTest,
                         ::testing::ValuesIn(LoadRenderCases()), CaseName);

// Every template in the shared folder, including the tool-use ones, renders a plain
// conversation. firefunction-v2 reads `functions` and `datetime`, which its callers pass.
class PlainConversationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PlainConversationTest, ParsesAndRenders) {
  ASSERT_OK_AND_ASSIGN(std::string source, ReadSharedFile(kTemplateDir + GetParam()));
  ASSERT_OK_AND_ASSIGN(ChatTemplate t,
                       ChatTemplate::Create(source, FixedDateOptions("<s>", "</s>")));
  ASSERT_OK_AND_ASSIGN(json::Value messages, json::Parse(R"([
      {"role": "user", "content": "What is 2+2?"},
      {"role": "assistant", "content": "2+2 equals 4."},
      {"role": "user", "content": "And 3+3?"}])"));
  json::Object extra{{"functions", "[]"}, {"datetime", "2024-07-26"}};
  for (bool flag : {true, false}) {
    ASSERT_OK_AND_ASSIGN(std::string prompt, t.Render(messages, flag, extra));
    EXPECT_THAT(prompt, HasSubstr("And 3+3?"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedTemplates, PlainConversationTest,
    ::testing::Values(
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja",
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "fireworks-ai-llama-3-firefunction-v2.jinja", "llama-cpp-deepseek-r1.jinja",
        "meetkai-functionary-medium-v3.1.jinja", "meetkai-functionary-medium-v3.2.jinja",
        "meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "meta-llama-Llama-3.3-70B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = info.param.substr(0, info.param.size() - 6);  // drop ".jinja"
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(ChatTemplateTest, RaiseExceptionBecomesInvalidArgumentWithPosition) {
  ASSERT_OK_AND_ASSIGN(
      ChatTemplate t,
      ChatTemplate::Create("{% if messages[0].role != 'user' %}\n"
                           "  {{ raise_exception('Conversation must start with a user') }}\n"
                           "{% endif %}"));
  EXPECT_THAT(
      t.Render(json::Value(json::Array{json::Object{{"role", "system"}, {"content", "x"}}}), false),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "template error at 2:6: raise_exception: Conversation must start with a "
               "user"));
}

TEST(ChatTemplateTest, StrftimeNowUsesTheInjectedClock) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t, ChatTemplate::Create("{{ strftime_now('%d %b %Y') }}",
                                                            FixedDateOptions("", "")));
  EXPECT_THAT(t.Render(json::Value(json::Array{}), false), IsOkAndHolds("26 Jul 2024"));
}

TEST(ChatTemplateTest, SeesMessagesTokensFlagAndExtraContext) {
  ASSERT_OK_AND_ASSIGN(
      ChatTemplate t,
      ChatTemplate::Create("{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}"
                           "{{ m.tool_calls | length }}]{% endfor %}{{ tools | tojson }}"
                           "{{ add_generation_prompt }}{{ eos_token }}",
                           FixedDateOptions("<s>", "</s>")));
  ChatMessage user{"user", "hi", {}};
  ChatMessage assistant{"assistant", json::Value(), {{"tool_calls", json::Array{1, 2}}}};
  json::Object extra{{"tools", json::Array{json::Object{{"name", "f"}}}}};
  EXPECT_THAT(t.Render({user, assistant}, true, extra),
              IsOkAndHolds("<s>[user:hi0][assistant:None2][{\"name\": \"f\"}]True</s>"));
}

TEST(ChatTemplateTest, RejectsBadMessagesAndReservedContextKeys) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t, ChatTemplate::Create("x"));
  EXPECT_THAT(t.Render(json::Value("hi"), false),
              StatusIs(absl::StatusCode::kInvalidArgument, "chat messages must be a JSON array"));
  EXPECT_THAT(t.Render(json::Value(json::Array{1}), false),
              StatusIs(absl::StatusCode::kInvalidArgument, "each chat message must be an object"));
  EXPECT_THAT(
      t.Render(json::Value(json::Array{}), false, json::Object{{"messages", 1}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "extra context may not override 'messages'"));
}

TEST(ChatTemplateTest, SyntaxErrorsFailAtCreateWithPosition) {
  EXPECT_THAT(ChatTemplate::Create("ok\n{% for m in messages %}{{ m }"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "template error at 2:24: unterminated tag: expected '}}'"));
  EXPECT_THAT(ChatTemplate::Create("{{ x | no_such_filter }}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "template error at 1:8: no filter named 'no_such_filter'"));
}

}  // namespace
}  // namespace tandem::chat
