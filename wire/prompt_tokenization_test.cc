// A conversation's chat_template_kwargs (prompt_tokenization.h): its members become template
// variables over the server's own, so a client can pin firefunction-v2's `datetime` (printed
// to the second) and get the same prompt ids at any time; what it may not set is refused
// naming the member.
#include "wire/prompt_tokenization.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ReadSharedFile;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

Tokenizer LoadStories() {
  absl::StatusOr<std::string> path = SharedFile("models/stories260K/stories260K.gguf");
  EXPECT_TRUE(path.ok()) << path.status();
  absl::StatusOr<Tokenizer> tokenizer = LoadTokenizer(*path, LoadOptions());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return *std::move(tokenizer);
}

v1::TokenizeRequest Chat(const std::string& kwargs) {
  v1::TokenizeRequest request;
  v1::ChatConversation* chat = request.mutable_chat();
  v1::ChatMessage* m = chat->add_messages();
  m->set_role("user");
  m->set_content("What is the weather in Paris?");
  v1::Tool* tool = chat->add_tools();
  tool->set_name("get_weather");
  tool->set_parameters_json(R"({"type": "object", "properties": {"city": {"type": "string"}}})");
  chat->set_template_kwargs_json(kwargs);
  return request;
}

TEST(TemplateKwargsTest, PinnedDatetimeRendersAsGivenInFirefunctionsTemplate) {
  const Tokenizer tokenizer = LoadStories();
  ASSERT_OK_AND_ASSIGN(
      const std::string firefunction,
      ReadSharedFile("models/chat_templates/fireworks-ai-llama-3-firefunction-v2.jinja"));
  const v1::TokenizeRequest pinned = Chat(R"({"datetime": "Jan 01 2026 00:00:00 GMT"})");
  ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse response,
                       TokenizePrompt(tokenizer, firefunction, pinned));
  EXPECT_THAT(response.rendered_text(), HasSubstr("Today is Jan 01 2026 00:00:00 GMT."));
  // Unpinned, the server's clock is printed.
  ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse now, TokenizePrompt(tokenizer, firefunction, Chat("")));
  EXPECT_THAT(now.rendered_text(), Not(HasSubstr("Jan 01 2026")));
  EXPECT_THAT(now.rendered_text(), HasSubstr(" GMT."));
}

TEST(TemplateKwargsTest, MembersOfAnyJsonTypeReachTheTemplate) {
  const Tokenizer tokenizer = LoadStories();
  const std::string source =
      "{{ greeting }}|{{ enable_thinking }}|{{ levels[1] }}|{{ nested.x }}|"
      "{% for m in messages %}{{ m.content }}{% endfor %}";
  ASSERT_OK_AND_ASSIGN(
      v1::TokenizeResponse response,
      TokenizePrompt(tokenizer, source,
                     Chat(R"({"greeting": "Hi", "enable_thinking": false, "levels": [1, 2],)"
                          R"( "nested": {"x": "y"}})")));
  EXPECT_EQ(response.rendered_text(), "Hi|False|2|y|What is the weather in Paris?");
}

TEST(TemplateKwargsTest, WhatTheRequestsOwnFieldsSetOrNotAnObjectIsInvalidNamingIt) {
  const Tokenizer tokenizer = LoadStories();
  const std::string source = "{% for m in messages %}{{ m.content }}{% endfor %}";
  std::string deep = "{\"a\": ";
  for (int i = 0; i < kMaxTemplateKwargsDepth; ++i) deep += "[";
  for (int i = 0; i < kMaxTemplateKwargsDepth; ++i) deep += "]";
  deep += "}";
  const struct {
    std::string kwargs;
    std::string message;
  } kCases[] = {
      {"{\"messages\": []}", "chat_template_kwargs may not set 'messages'"},
      {"{\"add_generation_prompt\": false}",
       "chat_template_kwargs may not set 'add_generation_prompt'"},
      {"{\"bos_token\": \"<s>\"}", "chat_template_kwargs may not set 'bos_token'"},
      {"{\"eos_token\": \"</s>\"}", "chat_template_kwargs may not set 'eos_token'"},
      {"{\"tools\": []}", "chat_template_kwargs may not set 'tools'"},
      {"{\"functions\": \"\"}", "chat_template_kwargs may not set 'functions'"},
      {"[1]", "chat_template_kwargs must be a JSON object"},
      {"\"x\"", "chat_template_kwargs must be a JSON object"},
      {"{\"a\": ", "chat_template_kwargs is not JSON"},
      {deep, "chat_template_kwargs is not JSON"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(TokenizePrompt(tokenizer, source, Chat(c.kwargs)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.kwargs;
  }
}

}  // namespace
}  // namespace tandem
