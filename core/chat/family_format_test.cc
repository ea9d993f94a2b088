#include "core/chat/family_format.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/chat/builtin_formats.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

struct FamilyCase {
  std::vector<std::string> tokens;
  std::optional<std::string> format;
};

TEST(FamilyFormatNameTest, NamesTheFormatWhoseTokensAreAllThere) {
  const std::vector<FamilyCase> cases = {
      {{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, "llama3"},
      {{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, "chatml"},
      {{"<bos>", "<start_of_turn>", "<end_of_turn>"}, "gemma"},
      {{"<s>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"}, "phi3"},
      // One token short of a family, or none: no guess.
      {{"<|start_header_id|>", "<|eot_id|>"}, std::nullopt},
      {{"<|im_start|>"}, std::nullopt},
      {{"<s>", "</s>"}, std::nullopt},
  };
  for (const FamilyCase& c : cases) {
    const std::set<std::string> tokens(c.tokens.begin(), c.tokens.end());
    const std::optional<std::string> format =
        FamilyFormatName([&](absl::string_view t) { return tokens.count(std::string(t)) > 0; });
    EXPECT_EQ(format, c.format) << c.tokens[0];
    if (format.has_value()) {
      EXPECT_TRUE(BuiltinFormatSource(*format).ok()) << *format;
    }
  }
}

}  // namespace
}  // namespace tandem::chat
