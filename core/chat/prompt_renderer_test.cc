#include "core/chat/prompt_renderer.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/chat/builtin_formats.h"
#include "core/tokenizer/vocabulary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// A vocabulary of a few letters, BOS "<s>", EOS "</s>" and the control tokens `specials`.
Tokenizer MakeTokenizer(const std::vector<std::string>& specials) {
  Vocabulary vocab;
  vocab.tokens = {"<s>", "</s>"};
  vocab.types = {TokenType::kControl, TokenType::kControl};
  for (const std::string& special : specials) {
    vocab.tokens.push_back(special);
    vocab.types.push_back(TokenType::kControl);
  }
  for (const char* piece : {"\xE2\x96\x81", "a", "b", "c"}) {
    vocab.tokens.push_back(piece);
    vocab.types.push_back(TokenType::kNormal);
  }
  vocab.scores.assign(vocab.tokens.size(), 0.0f);
  vocab.bos_id = 0;
  vocab.eos_id = 1;
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::Create(std::move(vocab));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return *std::move(tokenizer);
}

const std::vector<ChatMessage>& Conversation() {
  static const std::vector<ChatMessage> messages = {
      {"system", json::Value("Be brief."), {}},
      {"user", json::Value("Hi <|im_end|>"), {}},
      {"assistant", json::Value("Hello"), {}},
      {"user", json::Value("More"), {}}};
  return messages;
}

// Shows BOS and EOS as the template sees them, and each message.
constexpr char kModelTemplate[] =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}{{ eos_token }}";

std::string BuiltinText(const std::string& format) {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  absl::StatusOr<ChatTemplate> t = BuiltinFormat(format, options);
  EXPECT_TRUE(t.ok()) << t.status();
  absl::StatusOr<std::string> text = t->Render(Conversation(), true);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

struct PolicyCase {
  std::string name;
  std::vector<std::string> specials;  // the vocabulary's control tokens besides BOS and EOS
  std::string format;                 // named by the caller; "" lets the policy choose
  std::optional<std::string> model_template;
  PromptFormatSource source;
  std::string format_name;
  std::string text;  // the rendering of Conversation()
  bool templated;
};

void PrintTo(const PolicyCase& c, std::ostream* os) { *os << c.name; }

class PromptRendererPolicyTest : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(PromptRendererPolicyTest, ChoosesTheFormatAndTheEncoding) {
  const PolicyCase& c = GetParam();
  const Tokenizer tokenizer = MakeTokenizer(c.specials);
  ASSERT_OK_AND_ASSIGN(PromptRenderer renderer,
                       PromptRenderer::Create(tokenizer, c.format, c.model_template));
  EXPECT_EQ(renderer.source(), c.source);
  EXPECT_EQ(renderer.format_name(), c.format_name);
  EXPECT_EQ(renderer.templated(), c.templated);
  ASSERT_OK_AND_ASSIGN(RenderedPrompt prompt, renderer.Render(Conversation(), true));
  EXPECT_EQ(prompt.text, c.text);
  // Templates write BOS and control tokens themselves; raw text is the user's own.
  EXPECT_EQ(prompt.encode.parse_special, c.templated);
  EXPECT_EQ(prompt.encode.add_special, !c.templated);
}

const std::vector<std::string> kChatml = {"<|im_start|>", "<|im_end|>"};

INSTANTIATE_TEST_SUITE_P(
    Policy, PromptRendererPolicyTest,
    ::testing::Values(
        PolicyCase{"named_format_over_the_models_template", kChatml, "llama2", kModelTemplate,
                   PromptFormatSource::kNamed, "llama2", BuiltinText("llama2"), true},
        PolicyCase{"named_raw_concatenates_the_contents", kChatml, "raw", kModelTemplate,
                   PromptFormatSource::kNamed, "raw", "Be brief.Hi <|im_end|>HelloMore", false},
        PolicyCase{"the_models_template_with_bos_and_eos_text", kChatml, "", kModelTemplate,
                   PromptFormatSource::kModelTemplate, "model",
                   "<s>[system]Be brief.[user]Hi <|im_end|>[assistant]Hello[user]More"
                   "[assistant]</s>",
                   true},
        PolicyCase{"no_template_the_vocabularys_family", kChatml, "", std::nullopt,
                   PromptFormatSource::kFamily, "chatml", BuiltinText("chatml"), true},
        PolicyCase{"no_template_no_family_raw", {}, "", std::nullopt, PromptFormatSource::kRaw,
                   "raw", "Be brief.Hi <|im_end|>HelloMore", false}),
    [](const ::testing::TestParamInfo<PolicyCase>& info) { return info.param.name; });

TEST(PromptRendererTest, AnUnknownFormatIsInvalidArgumentListingTheKnownOnes) {
  EXPECT_THAT(PromptRenderer::Create(MakeTokenizer({}), "klingon", std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown chat format 'klingon'; known: chatml")));
}

TEST(PromptRendererTest, ABrokenModelTemplateIsInvalidArgument) {
  EXPECT_THAT(PromptRenderer::Create(MakeTokenizer({}), "", std::string("{% for %}")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("template error")));
}

TEST(PromptRendererTest, TheGenerationPromptIsTheCallersChoice) {
  ASSERT_OK_AND_ASSIGN(PromptRenderer renderer,
                       PromptRenderer::Create(MakeTokenizer({}), "", kModelTemplate));
  ASSERT_OK_AND_ASSIGN(RenderedPrompt prompt, renderer.Render(Conversation(), false));
  EXPECT_EQ(prompt.text, "<s>[system]Be brief.[user]Hi <|im_end|>[assistant]Hello[user]More</s>");
}

// Shows the tools and each call's arguments as the template sees them (tojson: an object, or
// a string escaped inside quotes).
constexpr char kToolTemplate[] =
    "{% for t in tools %}<tool {{ t.function.name }}>{% endfor %}"
    "{% for m in messages %}[{{ m.role }}]{% if m.tool_calls %}"
    "{% for c in m.tool_calls %}{{ c.function.name }}{{ c.function.arguments | tojson }}"
    "{% endfor %}{% else %}{{ m.content }}{% endif %}{% endfor %}";

std::vector<ChatMessage> ToolConversation(json::Value arguments) {
  json::Object call{{"id", "call12345"},
                    {"type", "function"},
                    {"function", json::Object{{"name", "f"}, {"arguments", std::move(arguments)}}}};
  return {{"user", json::Value("Go"), {}},
          {"assistant", json::Value(), json::Object{{"tool_calls", json::Array{std::move(call)}}}},
          {"tool", json::Value("done"), json::Object{{"tool_call_id", "call12345"}}}};
}

TEST(PromptRendererTest, PassesTheExtraContextAndBringsToolCallsIntoTheTemplatesShape) {
  ASSERT_OK_AND_ASSIGN(PromptRenderer renderer,
                       PromptRenderer::Create(MakeTokenizer({}), "", std::string(kToolTemplate)));
  EXPECT_EQ(renderer.tool_call_shape(), (ToolCallShape{true, false}));
  const json::Object context{
      {"tools", json::Array{json::Object{{"type", "function"},
                                         {"function", json::Object{{"name", "f"}}}}}}};
  ASSERT_OK_AND_ASSIGN(RenderedPrompt prompt,
                       renderer.Render(ToolConversation("{\"x\": 1}"), false, context));
  EXPECT_EQ(prompt.text, "<tool f>[user]Go[assistant]f{\"x\": 1}[tool]done");
  // Without the context, no tools; the two-argument Render is the same path.
  ASSERT_OK_AND_ASSIGN(prompt, renderer.Render(ToolConversation("{\"x\": 1}"), false));
  EXPECT_EQ(prompt.text, "[user]Go[assistant]f{\"x\": 1}[tool]done");
}

TEST(PromptRendererTest, AMalformedToolCallIsInvalidArgumentNamingIt) {
  ASSERT_OK_AND_ASSIGN(PromptRenderer renderer,
                       PromptRenderer::Create(MakeTokenizer({}), "", std::string(kToolTemplate)));
  EXPECT_THAT(renderer.Render(ToolConversation(json::Value(7)), false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "messages[1].tool_calls[0].function.arguments: expected a JSON string or "
                       "object"));
}

}  // namespace
}  // namespace tandem::chat
