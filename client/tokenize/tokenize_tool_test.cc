#include "client/tokenize/tokenize_tool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedFile;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string WriteTemp(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(TokenizeToolTest, EncodesWithBosAndDecodesBack) {
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile("models/stories260K/stories260K.gguf"));
  TokenizeToolOptions options;
  options.model = model;
  options.add_special = true;
  ToolResult encoded = RunTokenizeTool(options, "Once upon a time");
  EXPECT_EQ(encoded.exit_code, 0) << encoded.err;
  EXPECT_EQ(encoded.out, "1 403 407 261 378\n");
  options.decode = true;
  ToolResult decoded = RunTokenizeTool(options, "1 403 407\n261 378\n");
  EXPECT_EQ(decoded.exit_code, 0) << decoded.err;
  EXPECT_EQ(decoded.out, "Once upon a time");
  options.parse_special = true;  // renders <s>
  EXPECT_EQ(RunTokenizeTool(options, "1 403").out, "<s> Once");
}

TEST(TokenizeToolTest, ParseSpecialKeepsControlTokensWhole) {
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile("models/stories260K/stories260K.gguf"));
  TokenizeToolOptions options;
  options.model = model;
  options.parse_special = true;
  EXPECT_EQ(RunTokenizeTool(options, "</s>").out, "2\n");
  options.parse_special = false;
  EXPECT_NE(RunTokenizeTool(options, "</s>").out, "2\n");
}

TEST(TokenizeToolTest, BenchReportsSpeed) {
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile("models/stories260K/stories260K.gguf"));
  TokenizeToolOptions options;
  options.model = model;
  options.bench = true;
  ToolResult r = RunTokenizeTool(options, "Once upon a time there was a dog.");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("MB_per_s "));
}

TEST(TokenizeToolTest, RendersChatTemplatesExactly) {
  ASSERT_OK_AND_ASSIGN(std::string renders_path,
                       SharedFile("models/chat_templates/expected_renders.json"));
  ASSERT_OK_AND_ASSIGN(std::string template_path,
                       SharedFile("models/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_OK_AND_ASSIGN(json::Value renders, json::Parse(ReadFile(renders_path)));
  const json::Object& root = renders.as_object();
  const json::Value& conversation = *root.Find("conversations")->as_object().Find("system_user");
  const json::Object& expected =
      root.Find("renders")->as_object().Find("Qwen-Qwen2.5-7B-Instruct.jinja")->as_object();
  TokenizeToolOptions options;
  options.chat_template = template_path;
  options.messages = WriteTemp("messages.json", json::Serialize(conversation));
  options.eos_token = expected.Find("eos_token")->as_string();
  for (bool generation : {true, false}) {
    options.add_generation_prompt = generation;
    ToolResult r = RunTokenizeTool(options, "");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected
                         .Find(absl::StrCat("system_user|add_generation_prompt=",
                                            generation ? "True" : "False"))
                         ->as_string());
  }
}

TEST(TokenizeToolTest, TemplateErrorsExitOneWithTheMessage) {
  TokenizeToolOptions options;
  options.chat_template =
      WriteTemp("raises.jinja", "{{ raise_exception('only user turns, please') }}");
  options.messages = WriteTemp("one.json", R"([{"role": "user", "content": "hi"}])");
  ToolResult r = RunTokenizeTool(options, "");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("only user turns, please"));
}

struct UsageCase {
  const char* name;
  TokenizeToolOptions options;
  int exit_code;
  const char* message;
};

TEST(TokenizeToolTest, UsageErrorsExitTwoWithOneLine) {
  TokenizeToolOptions missing_model;
  missing_model.model = "/nonexistent/model.gguf";
  TokenizeToolOptions both;
  both.model = "x.gguf";
  both.chat_template = "t.jinja";
  both.messages = "m.json";
  TokenizeToolOptions template_only;
  template_only.chat_template = "t.jinja";
  TokenizeToolOptions missing_template;
  missing_template.chat_template = "/nonexistent/t.jinja";
  missing_template.messages = "/nonexistent/m.json";
  for (const UsageCase& c :
       {UsageCase{"nothing", {}, 2, "either --model"},
        UsageCase{"missing model", missing_model, 2, "/nonexistent/model.gguf"},
        UsageCase{"both modes", both, 2, "either --model"},
        UsageCase{"template only", template_only, 2, "go together"},
        UsageCase{"missing template", missing_template, 2, "t.jinja"}}) {
    ToolResult r = RunTokenizeTool(c.options, "");
    EXPECT_EQ(r.exit_code, c.exit_code) << c.name;
    EXPECT_THAT(r.err, StartsWith("tandem-tokenize: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.name;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << c.name;
  }
}

TEST(TokenizeToolTest, DecodingAnIdOutsideTheVocabularyExitsOne) {
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile("models/stories260K/stories260K.gguf"));
  TokenizeToolOptions options;
  options.model = model;
  options.decode = true;
  ToolResult r = RunTokenizeTool(options, "5 600");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("token id 600"));
}

// The tandem-tokenize binary: $TANDEM_BIN, Bazel's runfiles tree, or build/bin beside the
// build/tests folder holding this test.
std::string ToolBinary() {
  std::vector<std::string> candidates;
  if (const char* bin = std::getenv("TANDEM_BIN"); bin != nullptr) {
    candidates.push_back(absl::StrCat(bin, "/tandem-tokenize"));
  }
  candidates.push_back("client/tokenize/tandem-tokenize");
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const std::string self(exe, n);
    candidates.push_back(self.substr(0, self.rfind('/')) + "/../bin/tandem-tokenize");
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return "tandem-tokenize";
}

int RunBinary(const std::string& args) {
  const std::string binary = ToolBinary();
  const int status = std::system(absl::StrCat(binary, " ", args, " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TokenizeToolBinaryTest, AnswersHelpAndVersionAndRejectsBadCommandLinesWithTwo) {
  EXPECT_EQ(RunBinary("--version"), 0);
  EXPECT_EQ(RunBinary("--help"), 0);
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile("models/stories260K/stories260K.gguf"));
  EXPECT_EQ(RunBinary(absl::StrCat("--model ", model, " --add-special --parse-special </dev/null")),
            0);
  EXPECT_EQ(RunBinary("--chat-template /nonexistent/t.jinja --messages /nonexistent/m.json"), 2);
  EXPECT_EQ(RunBinary("--no-such-flag"), 2);
  EXPECT_EQ(RunBinary("stray-argument"), 2);
}

}  // namespace
}  // namespace tandem
