#include "core/chat/builtin_formats.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;

constexpr char kConversation[] = R"([
  {"role": "system", "content": "You are helpful."},
  {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello!"},
  {"role": "user", "content": "How are you?"}])";

struct FormatCase {
  std::string name;
  std::string bos_token;
  std::string eos_token;
  std::string without_generation_prompt;
  std::string generation_prompt;  // appended when add_generation_prompt is true
};

// Expected layouts written from each format's published description (see builtin_formats.h).
TEST(BuiltinFormatsTest, RenderEachDocumentedLayout) {
  const std::vector<FormatCase> cases = {
      {"chatml", "", "",
       "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
       "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n",
       "<|im_start|>assistant\n"},
      {"llama2", "<s>", "</s>",
       "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHi [/INST] Hello! </s>"
       "<s>[INST] How are you? [/INST]",
       ""},
      {"llama3", "<|begin_of_text|>", "<|eot_id|>",
       "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>",
       "<|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"mistral", "<s>", "</s>",
       "<s>[INST] You are helpful.\n\nHi [/INST]Hello!</s>[INST] How are you? [/INST]", ""},
      {"phi3", "<s>", "<|endoftext|>",
       "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
       "<|user|>\nHow are you?<|end|>\n",
       "<|assistant|>\n"},
      {"gemma", "<bos>", "<eos>",
       "<bos><start_of_turn>user\nYou are helpful.\n\nHi<end_of_turn>\n"
       "<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nHow are "
       "you?<end_of_turn>\n",
       "<start_of_turn>model\n"},
      {"zephyr", "<s>", "</s>",
       "<|system|>\nYou are helpful.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n"
       "<|user|>\nHow are you?</s>\n",
       "<|assistant|>\n"},
      {"raw", "<s>", "</s>", "You are helpful.HiHello!How are you?", ""},
  };
  ASSERT_OK_AND_ASSIGN(json::Value messages, json::Parse(kConversation));
  for (const FormatCase& c : cases) {
    ChatTemplateOptions options;
    options.bos_token = c.bos_token;
    options.eos_token = c.eos_token;
    ASSERT_OK_AND_ASSIGN(ChatTemplate t, BuiltinFormat(c.name, options));
    EXPECT_THAT(t.Render(messages, false), IsOkAndHolds(c.without_generation_prompt)) << c.name;
    EXPECT_THAT(t.Render(messages, true),
                IsOkAndHolds(c.without_generation_prompt + c.generation_prompt))
        << c.name;
  }
}

TEST(BuiltinFormatsTest, FormatsWithoutSystemRoleStartWithTheUser) {
  ASSERT_OK_AND_ASSIGN(json::Value messages,
                       json::Parse(R"([{"role": "user", "content": " Hi "}])"));
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  ASSERT_OK_AND_ASSIGN(ChatTemplate llama2, BuiltinFormat("llama2", options));
  EXPECT_THAT(llama2.Render(messages, true), IsOkAndHolds("<s>[INST] Hi [/INST]"));
  ASSERT_OK_AND_ASSIGN(ChatTemplate gemma, BuiltinFormat("gemma", options));
  EXPECT_THAT(gemma.Render(messages, true),
              IsOkAndHolds("<s><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"));
}

TEST(BuiltinFormatsTest, StructuredContentUsesItsTextParts) {
  ASSERT_OK_AND_ASSIGN(json::Value messages, json::Parse(R"([{"role": "user", "content": [
      {"type": "text", "text": "look: "}, {"type": "image", "url": "x.png"},
      {"type": "text", "text": "a cat"}]}])"));
  ASSERT_OK_AND_ASSIGN(ChatTemplate raw, BuiltinFormat("raw"));
  EXPECT_THAT(raw.Render(messages, false), IsOkAndHolds("look: a cat"));
  ASSERT_OK_AND_ASSIGN(ChatTemplate chatml, BuiltinFormat("chatml"));
  EXPECT_THAT(chatml.Render(messages, false),
              IsOkAndHolds("<|im_start|>user\nlook: a cat<|im_end|>\n"));
}

TEST(BuiltinFormatsTest, UnknownNameListsTheKnownOnes) {
  EXPECT_THAT(BuiltinFormatNames(), ElementsAre("chatml", "gemma", "llama2", "llama3", "mistral",
                                                "phi3", "raw", "zephyr"));
  EXPECT_THAT(BuiltinFormat("vicuna"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown chat format 'vicuna'; known: chatml, gemma, llama2, llama3, "
                       "mistral, phi3, raw, zephyr"));
}

}  // namespace
}  // namespace tandem::chat
