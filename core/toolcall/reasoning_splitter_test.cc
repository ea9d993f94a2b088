#include "core/toolcall/reasoning_splitter.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

struct Split {
  std::string reasoning;
  std::string content;
  bool done = false;  // reasoning_done() before Finish
};

// Feeds `text` cut at `cuts` (ascending offsets), then finishes.
Split FeedChunks(absl::string_view text, bool starts_in_reasoning,
                 const std::vector<size_t>& cuts) {
  ReasoningSplitter splitter(starts_in_reasoning);
  Split split;
  size_t begin = 0;
  auto add = [&](const ReasoningDelta& d) {
    split.reasoning += d.reasoning;
    split.content += d.content;
  };
  for (size_t cut : cuts) {
    add(splitter.Feed(text.substr(begin, cut - begin)));
    begin = cut;
  }
  add(splitter.Feed(text.substr(begin)));
  split.done = splitter.reasoning_done();
  add(splitter.Finish());
  return split;
}

Split FeedWhole(absl::string_view text, bool starts_in_reasoning) {
  return FeedChunks(text, starts_in_reasoning, {});
}

struct SplitCase {
  const char* name;
  bool starts_in_reasoning;
  std::string output;
  std::string reasoning;
  std::string content;
  bool done;  // reasoning_done() once the whole output was fed
};

const std::vector<SplitCase>& Cases() {
  static const auto* cases = new std::vector<SplitCase>{
      {"Qwen3", false, "<think>\nLet me think.\n</think>\n\nThe answer is 4.", "Let me think.",
       "The answer is 4.", true},
      {"WhitespaceBeforeOpen", false, "  \n<think>x</think>y", "x", "y", true},
      {"InnerWhitespaceKept", false, "<think>a\n\n b\t</think> c d ", "a\n\n b", "c d ", true},
      {"NoOpenIsAllContentVerbatim", false, "  Hello <think>x</think>", "",
       "  Hello <think>x</think>", true},
      {"UnclosedStaysReasoning", false, "<think>unfinished thought  \n", "unfinished thought", "",
       false},
      {"EmptyBlock", false, "<think></think>answer", "", "answer", true},
      {"EmptyBlockOfNewlines", false, "<think>\n\n</think>\n\nanswer", "", "answer", true},
      {"PartialOpenAtEndIsContent", false, "<thin", "", "<thin", false},
      {"SpacedOpenIsNoTag", false, "< think>x", "", "< think>x", true},
      {"OnlyWhitespace", false, "\n\n", "", "\n\n", false},
      {"Empty", false, "", "", "", false},
      {"SimilarTagIsReasoning", false, "<think>a </thinking> b</think> c", "a </thinking> b", "c",
       true},
      {"DoubledAngle", false, "<think>a<</think>b", "a<", "b", true},
      {"SecondCloseIsContent", false, "<think>a</think>b</think>c", "a", "b</think>c", true},
      {"PartialCloseAtEndIsReasoning", false, "<think>a </thi", "a </thi", "", false},
      {"Utf8", false, "<think>日本</think>語", "日本", "語", true},
      {"R1Distill", true, "Okay, so 2+2.\n</think>\n\n4", "Okay, so 2+2.", "4", true},
      {"OpenedTwiceDropsTheRepeat", true, "\n<think>\nx</think>y", "x", "y", true},
      {"OpenedAndClosedAtOnce", true, "</think>answer", "", "answer", true},
      {"OpenedNeverClosed", true, "no close", "no close", "", false},
      {"OpenedPartialTagAtEnd", true, "<thin", "<thin", "", false},
      {"OpenedPartialOpenThenText", true, " <thx", "<thx", "", false},
      {"OpenedEmpty", true, "", "", "", false},
  };
  return *cases;
}

class ReasoningSplitterTest : public ::testing::TestWithParam<SplitCase> {};

TEST_P(ReasoningSplitterTest, SplitsWholeOutput) {
  const SplitCase& c = GetParam();
  const Split split = FeedWhole(c.output, c.starts_in_reasoning);
  EXPECT_EQ(split.reasoning, c.reasoning);
  EXPECT_EQ(split.content, c.content);
  EXPECT_EQ(split.done, c.done);
}

TEST_P(ReasoningSplitterTest, SplitsByteAtATimeTheSame) {
  const SplitCase& c = GetParam();
  std::vector<size_t> cuts;
  for (size_t i = 1; i < c.output.size(); ++i) cuts.push_back(i);
  const Split split = FeedChunks(c.output, c.starts_in_reasoning, cuts);
  EXPECT_EQ(split.reasoning, c.reasoning);
  EXPECT_EQ(split.content, c.content);
  EXPECT_EQ(split.done, c.done);
}

INSTANTIATE_TEST_SUITE_P(Outputs, ReasoningSplitterTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<SplitCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(ReasoningSplitterTest, HoldsBackOnlyWhatIsUndecided) {
  ReasoningSplitter splitter(false);
  ReasoningDelta d = splitter.Feed(" <thi");
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(splitter.reasoning_done());
  d = splitter.Feed("nk>\nStep 1. \n</th");
  EXPECT_EQ(d.reasoning, "Step 1.");  // the spaces and "</th" wait
  EXPECT_EQ(d.content, "");
  d = splitter.Feed("is");
  EXPECT_EQ(d.reasoning, " \n</this");
  d = splitter.Feed("</think>");
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(splitter.reasoning_done());
  d = splitter.Feed("\n\nAnswer");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Answer");
  EXPECT_TRUE(splitter.Finish().empty());
}

TEST(ReasoningSplitterTest, ContentWithoutThinkFlowsAtOnce) {
  ReasoningSplitter splitter(false);
  EXPECT_EQ(splitter.Feed("Hi").content, "Hi");
  EXPECT_TRUE(splitter.reasoning_done());
  EXPECT_EQ(splitter.Feed(" <think>").content, " <think>");
}

TEST(ReasoningSplitterTest, NothingAfterFinish) {
  ReasoningSplitter splitter(true);
  EXPECT_EQ(splitter.Feed("a").reasoning, "a");
  EXPECT_TRUE(splitter.Finish().empty());
  EXPECT_TRUE(splitter.Feed("more").empty());
  EXPECT_TRUE(splitter.Finish().empty());
}

// The split as a whole-text function, written independently of the streaming state machine.
Split Reference(absl::string_view text, bool starts_in_reasoning) {
  const absl::string_view lead = absl::StripLeadingAsciiWhitespace(text);
  absl::string_view body;
  if (absl::StartsWith(lead, "<think>")) {
    body = lead.substr(7);
  } else if (starts_in_reasoning) {
    body = lead;
  } else {
    return {"", std::string(text), false};
  }
  const size_t close = body.find("</think>");
  if (close == absl::string_view::npos) {
    return {std::string(absl::StripAsciiWhitespace(body)), "", false};
  }
  return {std::string(absl::StripAsciiWhitespace(body.substr(0, close))),
          std::string(absl::StripLeadingAsciiWhitespace(body.substr(close + 8))), false};
}

// Random outputs made of tag pieces, whitespace and text, cut at random places: every cutting
// gives the reference's split (fixed seed; 3000 outputs, 8 cuttings each).
TEST(ReasoningSplitterTest, AnyChunkingGivesTheSameSplitAsTheWholeText) {
  const std::vector<std::string> pieces = {"<think>", "</think>", "<",  "</", "<thi",
                                           "</thin",  "think",    ">",  " ",  "\n",
                                           "\t",      "a",        "bc", "日"};
  std::mt19937 rng(28);
  for (int n = 0; n < 3000; ++n) {
    std::string text;
    const int length = static_cast<int>(rng() % 12);
    for (int i = 0; i < length; ++i) text += pieces[rng() % pieces.size()];
    const bool starts_in_reasoning = rng() % 2 == 0;
    const Split expected = Reference(text, starts_in_reasoning);
    for (int k = 0; k < 8; ++k) {
      std::vector<size_t> cuts;
      for (size_t i = 1; i < text.size(); ++i) {
        if (rng() % 3 == 0) cuts.push_back(i);
      }
      const Split split = FeedChunks(text, starts_in_reasoning, cuts);
      ASSERT_EQ(split.reasoning, expected.reasoning) << "'" << text << "' " << starts_in_reasoning;
      ASSERT_EQ(split.content, expected.content) << "'" << text << "' " << starts_in_reasoning;
    }
  }
}

}  // namespace
}  // namespace tandem::toolcall
