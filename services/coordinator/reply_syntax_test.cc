#include "services/coordinator/reply_syntax.h"

#include <string>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using toolcall::ReasoningFormat;
using toolcall::ToolCallFormat;

v1::GenerateRequest Request(const std::string& text) {
  v1::GenerateRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

constexpr char kTools[] = R"(chat { messages { role: "user" content: "hi" }
    tools { name: "f" parameters_json: "{\"type\": \"object\"}" } tools { name: "g" } })";

struct Case {
  const char* name;
  std::string request;
  ToolCallFormat format;
  ReasoningFormat reasoning;
  const char* prompt;
  absl::StatusCode code;
  const char* message;  // the error's, or what the spec text holds
  ConstraintSpec::Kind kind;
  ReasoningPrefix prefix;
  ToolCallFormat parsed;  // ReplyParsing::tool_format
};

const Case kCases[] = {
    {"NoToolsNothing", R"(chat { messages { role: "user" content: "hi" } })",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kOk, "",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},
    {"ToolsAutoByDefault", kTools, ToolCallFormat::kHermes, ReasoningFormat::kNone, "",
     absl::StatusCode::kOk, "\"choice\":\"auto\"", ConstraintSpec::Kind::kToolCalls,
     ReasoningPrefix::kNone, ToolCallFormat::kHermes},
    {"ToolsRequired", std::string(kTools) + " tool_choice { mode: MODE_REQUIRED }",
     ToolCallFormat::kMistral, ReasoningFormat::kNone, "", absl::StatusCode::kOk,
     "\"choice\":\"required\"", ConstraintSpec::Kind::kToolCalls, ReasoningPrefix::kNone,
     ToolCallFormat::kMistral},
    {"ToolsNoneShownOnly", std::string(kTools) + " tool_choice { mode: MODE_NONE }",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kOk, "",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},
    {"NamedToolThatIsNot",
     std::string(kTools) + " tool_choice { mode: MODE_FUNCTION function: \"h\" }",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kInvalidArgument,
     "tool_choice.function 'h' is not one of the tools",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"ModelWithoutToolFormat", kTools, ToolCallFormat::kNone, ReasoningFormat::kNone, "",
     absl::StatusCode::kInvalidArgument, "--tool-call-format",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"RequiredWithoutTools",
     R"(chat { messages { role: "user" content: "hi" } } tool_choice { mode: MODE_REQUIRED })",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kInvalidArgument,
     "tool_choice needs tools",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"ToolsAndAConstraint", std::string(kTools) + " constraint { regex: \"a\" }",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kInvalidArgument,
     "cannot be combined with a regex constraint",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"ClientSetToolCallsConstraint",
     R"(chat { messages { role: "user" content: "hi" } } constraint { tool_calls: "{}" })",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kInvalidArgument,
     "constraint.tool_calls is the coordinator's",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"BadParameters",
     R"(chat { messages { role: "user" content: "hi" } tools { name: "f" parameters_json: "[" } })",
     ToolCallFormat::kHermes, ReasoningFormat::kNone, "", absl::StatusCode::kInvalidArgument,
     "tools[0] ('f'): parameters_json is not a JSON object",
     ConstraintSpec::Kind::kNone, ReasoningPrefix::kNone, ToolCallFormat::kNone},

    {"ReasoningOpenedInThePrompt",
     R"(chat { messages { role: "user" content: "hi" } } constraint { regex: "a" })",
     ToolCallFormat::kNone, ReasoningFormat::kThinkTags, "<|Assistant|><think>\n",
     absl::StatusCode::kOk, "", ConstraintSpec::Kind::kRegex, ReasoningPrefix::kInPrompt,
     ToolCallFormat::kNone},
    {"ReasoningMayOpen",
     R"(chat { messages { role: "user" content: "hi" } } constraint { regex: "a" })",
     ToolCallFormat::kNone, ReasoningFormat::kThinkTags, "<|im_start|>assistant\n",
     absl::StatusCode::kOk, "", ConstraintSpec::Kind::kRegex, ReasoningPrefix::kOptional,
     ToolCallFormat::kNone},
    {"RawTextIsNotSplit", R"(text: "hi" constraint { regex: "a" })", ToolCallFormat::kNone,
     ReasoningFormat::kThinkTags, "", absl::StatusCode::kOk, "", ConstraintSpec::Kind::kRegex,
     ReasoningPrefix::kNone, ToolCallFormat::kNone},
};

class ReplySyntaxTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReplySyntaxTest, GivesTheConstraintAndParsingOrTheError) {
  const Case& c = GetParam();
  const v1::GenerateRequest request = Request(c.request);
  OutputSyntax syntax;
  syntax.tool_format = c.format;
  syntax.reasoning = c.reasoning;
  ConstraintSpec spec;
  if (request.constraint().has_regex()) spec = {ConstraintSpec::Kind::kRegex, "a"};
  ReplyParsing parsing;
  const absl::Status status = ApplyReplySyntax(request, syntax, c.prompt, &spec, &parsing);
  if (c.code != absl::StatusCode::kOk) {
    EXPECT_THAT(status, StatusIs(c.code, HasSubstr(c.message)));
    return;
  }
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(spec.kind, c.kind);
  EXPECT_THAT(spec.text, HasSubstr(c.message));
  EXPECT_EQ(spec.reasoning, c.prefix);
  EXPECT_EQ(parsing.tool_format, c.parsed);
  EXPECT_EQ(parsing.split_reasoning,
            c.reasoning == ReasoningFormat::kThinkTags && request.has_chat());
}

INSTANTIATE_TEST_SUITE_P(Requests, ReplySyntaxTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
