#include "core/chat/model_chat_template.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Optional;

std::string TempFolderWithConfig(const std::string& name, const std::string& config) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer_config.json") << config;
  return dir;
}

TEST(ModelChatTemplateTest, ModelsWithoutTemplatesHaveNone) {
  ASSERT_OK_AND_ASSIGN(std::string gguf,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  EXPECT_THAT(ModelChatTemplate(gguf), IsOkAndHolds(std::nullopt));
  ASSERT_OK_AND_ASSIGN(std::string hf, testing::SharedFile("models/stories260K/hf"));
  EXPECT_THAT(ModelChatTemplate(hf), IsOkAndHolds(std::nullopt));
}

TEST(ModelChatTemplateTest, ReadsStringAndNamedListTemplates) {
  EXPECT_THAT(ModelChatTemplate(TempFolderWithConfig("plain", R"({"chat_template": "{{ x }}"})")),
              IsOkAndHolds(Optional(std::string("{{ x }}"))));
  EXPECT_THAT(ModelChatTemplate(TempFolderWithConfig(
                  "named", R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                         {"name": "default", "template": "D"}]})")),
              IsOkAndHolds(Optional(std::string("D"))));
}

TEST(ModelChatTemplateTest, OwnTemplateFilesComeBeforeTokenizerConfig) {
  const std::string jinja =
      TempFolderWithConfig("own_jinja", R"({"chat_template": "from tokenizer_config"})");
  std::ofstream(jinja + "/chat_template.jinja") << "{{ bos_token }}jinja file";
  EXPECT_THAT(ModelChatTemplate(jinja),
              IsOkAndHolds(Optional(std::string("{{ bos_token }}jinja file"))));
  const std::string json = TempFolderWithConfig("own_json", R"({})");
  std::ofstream(json + "/chat_template.json") << R"({"chat_template": "json file"})";
  EXPECT_THAT(ModelChatTemplate(json), IsOkAndHolds(Optional(std::string("json file"))));
  const std::string broken = TempFolderWithConfig("own_json_broken", R"({})");
  std::ofstream(broken + "/chat_template.json") << R"({"chat_template": 1})";
  EXPECT_THAT(ModelChatTemplate(broken),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chat_template.json")));
}

TEST(ModelChatTemplateTest, MalformedConfigNamesTheFile) {
  EXPECT_THAT(ModelChatTemplate(TempFolderWithConfig("broken", "{not json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokenizer_config.json")));
  EXPECT_THAT(ModelChatTemplate(TempFolderWithConfig("number", R"({"chat_template": 7})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("neither")));
  EXPECT_THAT(ModelChatTemplate("/no/such/model.gguf"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace tandem::chat
