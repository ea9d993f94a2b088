#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/shared_data_test_util.h"
#include "core/toolcall/tool_call_format.h"
#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

bool NoTokens(absl::string_view) { return false; }

TEST(ToolCallFormatDetectionTest, EverySharedTemplateGivesItsFamily) {
  struct Expected {
    const char* file;
    ToolCallFormat format;
  };
  const std::vector<Expected> expected = {
      {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", ToolCallFormat::kCommandR},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", ToolCallFormat::kCommandR},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", ToolCallFormat::kDeepSeekR1},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::kDeepSeekR1},
      {"fireworks-ai-llama-3-firefunction-v2.jinja", ToolCallFormat::kFirefunctionV2},
      {"llama-cpp-deepseek-r1.jinja", ToolCallFormat::kDeepSeekR1},
      {"meetkai-functionary-medium-v3.1.jinja", ToolCallFormat::kFunctionaryV31},
      {"meetkai-functionary-medium-v3.2.jinja", ToolCallFormat::kFunctionaryV32},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
  };
  for (const Expected& e : expected) {
    absl::StatusOr<std::string> source =
        testing::ReadSharedFile(std::string("models/chat_templates/") + e.file);
    ASSERT_TRUE(source.ok()) << source.status();
    EXPECT_EQ(ToolCallFormatName(DetectToolCallFormat(*source, NoTokens)),
              ToolCallFormatName(e.format))
        << e.file;
  }
}

TEST(ToolCallFormatDetectionTest, TemplateWithoutToolsDefersToTheSpecialTokens) {
  struct Case {
    const char* token;
    ToolCallFormat format;
  };
  const std::vector<Case> cases = {
      {"<tool_call>", ToolCallFormat::kHermes},
      {"[TOOL_CALLS]", ToolCallFormat::kMistral},
      {"<｜tool▁calls▁begin｜>", ToolCallFormat::kDeepSeekR1},
      {"<|python_tag|>", ToolCallFormat::kLlama3Json},
      {"<|START_ACTION|>", ToolCallFormat::kCommandR},
      {"<|im_start|>", ToolCallFormat::kNone},
  };
  const std::string chatml =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
      "{% endfor %}";
  for (const Case& c : cases) {
    auto has = [&](absl::string_view token) { return token == c.token; };
    EXPECT_EQ(ToolCallFormatName(DetectToolCallFormat(chatml, has)), ToolCallFormatName(c.format))
        << c.token;
    EXPECT_EQ(ToolCallFormatName(DetectToolCallFormat("", has)), ToolCallFormatName(c.format))
        << c.token;
  }
}

TEST(ToolCallFormatDetectionTest, HermesTokenWinsOverPythonTag) {
  // Hermes 3 is a Llama 3.1 fine-tune: its vocabulary has both.
  auto has = [](absl::string_view token) {
    return token == "<tool_call>" || token == "<|python_tag|>";
  };
  EXPECT_EQ(DetectToolCallFormat("", has), ToolCallFormat::kHermes);
}

TEST(ToolCallFormatDetectionTest, TemplateMarkersWinOverTokens) {
  auto has = [](absl::string_view token) { return token == "<tool_call>"; };
  EXPECT_EQ(DetectToolCallFormat("{{ '[TOOL_CALLS][' }}", has), ToolCallFormat::kMistral);
}

}  // namespace
}  // namespace tandem::toolcall
