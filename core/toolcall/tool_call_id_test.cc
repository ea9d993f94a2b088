#include "core/toolcall/tool_call_id.h"

#include <random>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

bool AllAlphanumeric(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

TEST(ToolCallIdTest, OpenAiStyleIsCallPrefixAnd24Alphanumerics) {
  std::mt19937_64 gen(28);
  std::set<std::string> seen;
  for (ToolCallFormat format : AllToolCallFormats()) {
    if (format == ToolCallFormat::kMistral) continue;
    for (int i = 0; i < 50; ++i) {
      const std::string id = NewToolCallId(format, gen);
      ASSERT_EQ(id.size(), 29u) << id;
      EXPECT_TRUE(absl::StartsWith(id, "call_")) << id;
      EXPECT_TRUE(AllAlphanumeric(id.substr(5))) << id;
      seen.insert(id);
    }
  }
  EXPECT_EQ(seen.size(), 7u * 50u);  // 62^24 ids: a repeat would be a bug
}

TEST(ToolCallIdTest, MistralIsExactlyNineAlphanumerics) {
  std::mt19937_64 gen(9);
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const std::string id = NewToolCallId(ToolCallFormat::kMistral, gen);
    ASSERT_EQ(id.size(), 9u) << id;
    EXPECT_TRUE(AllAlphanumeric(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(ToolCallIdTest, SameGeneratorStateGivesSameId) {
  std::mt19937_64 a(5);
  std::mt19937_64 b(5);
  EXPECT_EQ(NewToolCallId(ToolCallFormat::kHermes, a), NewToolCallId(ToolCallFormat::kHermes, b));
}

}  // namespace
}  // namespace tandem::toolcall
