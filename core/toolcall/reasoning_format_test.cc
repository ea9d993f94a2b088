#include "core/toolcall/reasoning_format.h"

#include <set>
#include <string>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::ReadSharedFile;
using ::tandem::testing::StatusIs;

TEST(ReasoningFormatTest, NamesRoundTrip) {
  for (ReasoningFormat f : {ReasoningFormat::kNone, ReasoningFormat::kThinkTags}) {
    EXPECT_THAT(ParseReasoningFormatName(ReasoningFormatName(f)), IsOkAndHolds(f));
  }
  EXPECT_EQ(ReasoningFormatName(ReasoningFormat::kNone), "none");
  EXPECT_EQ(ReasoningFormatName(ReasoningFormat::kThinkTags), "think");
}

TEST(ReasoningFormatTest, UnknownNameIsInvalidArgumentNamingIt) {
  EXPECT_THAT(ParseReasoningFormatName("deepseek"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown reasoning format 'deepseek'; known: none, think"));
  EXPECT_THAT(ParseReasoningFormatName(""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown reasoning format ''; known: none, think"));
}

bool NoTokens(absl::string_view) { return false; }

struct DetectCase {
  const char* template_file;
  ReasoningFormat expected;
};

class DetectReasoningFormatTest : public ::testing::TestWithParam<DetectCase> {};

TEST_P(DetectReasoningFormatTest, FromTheSharedTemplate) {
  ASSERT_OK_AND_ASSIGN(std::string source, ReadSharedFile(std::string("models/chat_templates/") +
                                                          GetParam().template_file));
  EXPECT_EQ(DetectReasoningFormat(source, NoTokens), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    SharedTemplates, DetectReasoningFormatTest,
    ::testing::Values(
        DetectCase{"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", ReasoningFormat::kThinkTags},
        DetectCase{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ReasoningFormat::kThinkTags},
        DetectCase{"llama-cpp-deepseek-r1.jinja", ReasoningFormat::kThinkTags},
        DetectCase{"Qwen-Qwen2.5-7B-Instruct.jinja", ReasoningFormat::kNone},
        DetectCase{"meta-llama-Llama-3.1-8B-Instruct.jinja", ReasoningFormat::kNone},
        DetectCase{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ReasoningFormat::kNone},
        DetectCase{"mistralai-Mistral-Nemo-Instruct-2407.jinja", ReasoningFormat::kNone}));

TEST(ReasoningFormatTest, DetectsFromTheVocabularyWithoutTemplate) {
  const std::set<std::string> qwen3 = {"<think>", "</think>", "<|im_start|>"};
  EXPECT_EQ(DetectReasoningFormat(
                "", [&](absl::string_view t) { return qwen3.count(std::string(t)) > 0; }),
            ReasoningFormat::kThinkTags);
  const std::set<std::string> close_only = {"</think>"};
  EXPECT_EQ(DetectReasoningFormat(
                "", [&](absl::string_view t) { return close_only.count(std::string(t)) > 0; }),
            ReasoningFormat::kThinkTags);
  EXPECT_EQ(DetectReasoningFormat("{{ messages }}", NoTokens), ReasoningFormat::kNone);
}

TEST(PromptOpensReasoningTest, OnlyATrailingOpenTag) {
  struct Case {
    std::string prompt;
    bool opens;
  };
  const Case cases[] = {
      {"<｜User｜>Hi<｜Assistant｜><think>\n", true},
      {"<|im_start|>assistant\n<think>", true},
      {"<think> \n\t", true},
      {"<|im_start|>assistant\n<think>\n\n</think>\n\n", false},  // Qwen3, thinking off
      {"<|im_start|>assistant\n", false},
      {"user: what does <think> mean?\nassistant:", false},
      {"<think>\nOkay", false},
      {"", false},
  };
  for (const Case& c : cases) EXPECT_EQ(PromptOpensReasoning(c.prompt), c.opens) << c.prompt;
}

}  // namespace
}  // namespace tandem::toolcall
