#include "services/coordinator/text_stream.h"

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "core/base/utf8.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const std::vector<std::string> kBytes = {"",         "Hel",  "lo", " wor", "ld",
                                         "\xE2\x82", "\xAC", "!",  "EN",   "D"};

std::string Feed(TextStream& stream, const std::vector<int32_t>& ids,
                 std::vector<std::string>* pieces) {
  std::string all;
  for (int32_t id : ids) {
    pieces->push_back(stream.Add(id));
    all += pieces->back();
  }
  return all + stream.Flush();
}

TEST(TextStreamTest, EmitsWholeCharactersOnly) {
  TextStream stream(&kBytes, {});
  std::vector<std::string> pieces;
  EXPECT_EQ(Feed(stream, {1, 2, 5, 6, 7}, &pieces), "Hello\xE2\x82\xAC!");
  EXPECT_EQ(pieces[2], "");              // half a euro sign is held back
  EXPECT_EQ(pieces[3], "\xE2\x82\xAC");  // and sent whole
}

TEST(TextStreamTest, CutsAtAStopStringAndHoldsBackItsPossibleStart) {
  TextStream stream(&kBytes, {"END"});
  std::vector<std::string> pieces;
  EXPECT_EQ(Feed(stream, {1, 2, 8, 9, 3}, &pieces), "Hello");
  EXPECT_EQ(pieces[2], "");  // "EN" might be the start of "END"
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(pieces[4], "");  // nothing after the stop
}

TEST(TextStreamTest, ReleasesAHeldPrefixThatDidNotBecomeAStopString) {
  TextStream stream(&kBytes, {"END"});
  std::vector<std::string> pieces;
  EXPECT_EQ(Feed(stream, {8, 7}, &pieces), "EN!");
  EXPECT_FALSE(stream.stopped());
  EXPECT_EQ(pieces[1], "EN!");
}

// Token bytes that make ill-formed UTF-8: id i is kBroken[i]. Expected texts write U+FFFD
// as '~'; they are what Python's bytes.decode("utf-8", errors="replace") gives for the
// concatenated bytes, cut before the first stop string.
const std::vector<std::string> kBroken = {
    "a",             // 0
    "\x80",          // 1 a lone continuation byte
    "\xC0",          // 2 C0 never leads (overlong)
    "\xAF",          // 3
    "\xED",          // 4 ED A0.. would be a surrogate
    "\xA0",          // 5
    "\xF4",          // 6 F4 90.. would be past U+10FFFF
    "\x90",          // 7
    "\xE2",          // 8 the euro sign E2 82 AC, in pieces
    "\x82",          // 9
    "\xAC",          // 10
    "b",             // 11
    "\xFF",          // 12
    "\xE2\x82\xAC",  // 13 a whole euro sign
};

struct BrokenCase {
  const char* name;
  std::vector<int32_t> ids;
  std::vector<std::string> stops;
  std::string expected;  // '~' is U+FFFD
  bool stopped;
};

const BrokenCase kBrokenCases[] = {
    {"lone_continuation", {0, 1, 0}, {}, "a~a", false},
    {"overlong", {2, 3, 0}, {}, "~~a", false},
    {"surrogate", {4, 5, 1}, {}, "~~~", false},
    {"past_10ffff", {6, 7, 1, 1}, {}, "~~~~", false},
    {"truncated_then_ascii", {8, 9, 0}, {}, "~a", false},
    {"truncated_then_whole", {8, 9, 13}, {}, "~\xE2\x82\xAC", false},
    {"split_character_completes",
     {8, 9, 10, 0},
     {},
     "\xE2\x82\xAC"
     "a",
     false},
    {"truncated_at_end_of_stream", {0, 8, 9}, {}, "a~", false},
    {"stop_after_a_replacement", {12, 11, 0}, {"b"}, "~", true},
    {"stop_is_a_replacement_character", {0, 12, 0}, {"\xEF\xBF\xBD"}, "a", true},
    {"stop_ends_with_the_final_replacement", {0, 11, 8}, {"b\xEF\xBF\xBD"}, "a", true},
    {"stop_of_a_split_character", {0, 8, 9, 10, 0}, {"\xE2\x82\xAC"}, "a", true},
    {"stop_not_matched_by_a_broken_character", {0, 8, 9, 11}, {"\xE2\x82\xAC"}, "a~b", false},
    {"invalid_stop_string_is_ignored", {0, 1, 0}, {"\x80"}, "a~a", false},
};

class TextStreamRepairTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(TextStreamRepairTest, StreamsWellFormedTextWithReplacementCharacters) {
  const BrokenCase& c = GetParam();
  TextStream stream(&kBroken, c.stops);
  std::vector<std::string> pieces;
  const std::string text = Feed(stream, c.ids, &pieces);
  for (const std::string& piece : pieces) {
    EXPECT_TRUE(utf8::Validate(piece).ok()) << "piece " << ::testing::PrintToString(piece);
  }
  EXPECT_TRUE(utf8::Validate(text).ok());
  EXPECT_EQ(absl::StrReplaceAll(text, {{"\xEF\xBF\xBD", "~"}}), c.expected);
  EXPECT_EQ(stream.stopped(), c.stopped);
}

INSTANTIATE_TEST_SUITE_P(Table, TextStreamRepairTest, ::testing::ValuesIn(kBrokenCases),
                         [](const ::testing::TestParamInfo<BrokenCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(TextStreamTest, AReplacementIsSentAsSoonAsTheSequenceTurnsInvalid) {
  TextStream stream(&kBroken, {});
  EXPECT_EQ(stream.Add(8), "");  // E2: may still become a character
  EXPECT_EQ(stream.Add(9), "");  // E2 82: still may
  EXPECT_EQ(stream.Add(0),
            "\xEF\xBF\xBD"
            "a");  // 'a' breaks it: U+FFFD, then 'a'
  EXPECT_EQ(stream.Flush(), "");
}

}  // namespace
}  // namespace tandem
