#include "services/coordinator/reply_parser.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

using toolcall::ToolCallFormat;

// Feeds `pieces` one by one, then finishes; returns the deltas merged as a client would.
struct Merged {
  std::string text, reasoning;
  std::vector<v1::ToolCall> calls;  // from the deltas
};

Merged FeedAll(ReplyParser& parser, const std::vector<std::string>& pieces) {
  Merged m;
  auto take = [&m](const v1::TokenDelta& d) {
    m.text += d.text();
    m.reasoning += d.reasoning_text();
    for (const v1::ToolCallDelta& piece : d.tool_calls()) {
      if (piece.index() == static_cast<int>(m.calls.size())) {
        m.calls.emplace_back().set_id(piece.id());
        m.calls.back().set_name(piece.name());
      }
      *m.calls[piece.index()].mutable_arguments() += piece.arguments();
    }
  };
  for (const std::string& p : pieces) {
    v1::TokenDelta d;
    parser.Feed(p, &d);
    take(d);
  }
  v1::TokenDelta end;
  parser.Finish(&end);
  take(end);
  return m;
}

TEST(ReplyParserTest, HermesCallsStreamWithAnIdAndTheirArguments) {
  ReplyParser parser({false, false, ToolCallFormat::kHermes});
  const Merged m = FeedAll(parser, {"Sure.", "<tool", "_call>\n{\"name\": \"f\", \"argu",
                                "ments\": {\"a\": 1}}\n</tool_call>"});
  EXPECT_EQ(m.text, "Sure.");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].name(), "f");
  EXPECT_EQ(m.calls[0].arguments(), "{\"a\": 1}");
  EXPECT_EQ(m.calls[0].id().substr(0, 5), "call_");
  EXPECT_EQ(m.calls[0].id().size(), 29u);
  ASSERT_EQ(parser.calls().size(), 1u);
  EXPECT_EQ(parser.calls()[0].id(), m.calls[0].id());
  EXPECT_EQ(parser.calls()[0].arguments(), "{\"a\": 1}");
}

TEST(ReplyParserTest, ReasoningOpenedByThePromptThenACall) {
  ReplyParser parser({true, true, ToolCallFormat::kHermes});
  const Merged m = FeedAll(parser, {"let me ", "think</th", "ink>\n\n<tool_call>\n",
                                "{\"name\": \"g\", \"arguments\": {}}\n</tool_call>"});
  EXPECT_EQ(m.reasoning, "let me think");
  EXPECT_EQ(m.text, "");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].name(), "g");
  EXPECT_EQ(m.calls[0].arguments(), "{}");
}

TEST(ReplyParserTest, MistralKeepsTheModelsOwnId) {
  ReplyParser parser({false, false, ToolCallFormat::kMistral});
  const Merged m = FeedAll(parser, {"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": \"y\"}, ",
                                "\"id\": \"abcDEF123\"}]"});
  ASSERT_EQ(parser.calls().size(), 1u);
  EXPECT_EQ(parser.calls()[0].name(), "f");
  EXPECT_EQ(parser.calls()[0].arguments(), "{\"x\": \"y\"}");
  EXPECT_EQ(parser.calls()[0].id().size(), 9u);  // the model's, or a fresh one of Mistral's shape
}

TEST(ReplyParserTest, WithoutToolsOrReasoningTextPassesAsItIs) {
  ReplyParser parser({false, false, ToolCallFormat::kNone});
  const Merged m = FeedAll(parser, {"<tool_call>", "<think>x</think>"});
  EXPECT_EQ(m.text, "<tool_call><think>x</think>");
  EXPECT_TRUE(m.calls.empty());
}

}  // namespace
}  // namespace tandem
