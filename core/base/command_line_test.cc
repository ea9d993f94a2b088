#include "core/base/command_line.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, top_k, 40, "test flag");
ABSL_FLAG(double, temp, 0.7, "test flag");
ABSL_FLAG(bool, verbose, false, "test flag");
ABSL_FLAG(std::string, draft, "", "test flag");

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<std::string>> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data(),
                          {"prog", "1", "usage", "command_line_test.cc"});
}

TEST(CommandLineTest, AcceptsDashedNamesBothValueFormsAndBooleans) {
  ASSERT_OK_AND_ASSIGN(auto positional,
                       Parse({"model.gguf", "--top-k", "7", "--temp=0.25", "--verbose", "--draft",
                              "d.gguf", "--", "--not-a-flag"}));
  EXPECT_THAT(positional, ElementsAre("model.gguf", "--not-a-flag"));
  EXPECT_EQ(absl::GetFlag(FLAGS_top_k), 7);
  EXPECT_EQ(absl::GetFlag(FLAGS_temp), 0.25);
  EXPECT_TRUE(absl::GetFlag(FLAGS_verbose));
  EXPECT_EQ(absl::GetFlag(FLAGS_draft), "d.gguf");
  ASSERT_OK(Parse({"--noverbose", "-top_k=3"}).status());
  EXPECT_FALSE(absl::GetFlag(FLAGS_verbose));
  EXPECT_EQ(absl::GetFlag(FLAGS_top_k), 3);
}

TEST(CommandLineTest, UnknownFlagsAndBadValuesAreInvalidArguments) {
  EXPECT_THAT(Parse({"--no-such-flag"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--no-such-flag")));
  EXPECT_THAT(Parse({"--top-k", "many"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'many'")));
  EXPECT_THAT(Parse({"--temp"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a value")));
}

TEST(CommandLineTest, ReportsWhichFlagsWereGivenEvenAtTheirDefault) {
  std::vector<std::string> args = {"prog", "--top-k", "40", "m.gguf", "--noverbose",
                                   "--temp=0.7", "--", "--draft"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<std::string> given;
  ASSERT_OK(ParseCommandLine(static_cast<int>(argv.size()), argv.data(),
                             {"prog", "1", "usage", "command_line_test.cc"}, &given)
                .status());
  EXPECT_THAT(given, ElementsAre("top_k", "verbose", "temp"));
}

}  // namespace
}  // namespace tandem
