#include "core/base/utf8_repair.h"

#include <random>
#include <string>

#include "absl/strings/str_replace.h"
#include "core/base/utf8.h"
#include "gtest/gtest.h"

namespace tandem::utf8 {
namespace {

// Expected outputs write U+FFFD as '~' (no input here contains '~'). Every row was checked
// against Python 3's bytes.decode("utf-8", errors="replace").
struct Case {
  const char* name;
  std::string input;
  std::string expected;
};

const Case kCases[] = {
    {"ascii", "plain text", "plain text"},
    {"whole_characters", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\xA6\x99",
     "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\xA6\x99"},
    {"lone_continuation", "\x80", "~"},
    {"two_continuations", "\xBF\x80", "~~"},
    {"continuation_between_ascii",
     "a\x80"
     "b",
     "a~b"},
    {"overlong_c0", "\xC0\xAF", "~~"},
    {"overlong_c1", "\xC1\xBF", "~~"},
    {"overlong_e0", "\xE0\x80\xAF", "~~~"},
    {"overlong_e0_high", "\xE0\x9F\xBF", "~~~"},
    {"overlong_f0", "\xF0\x80\x80\xAF", "~~~~"},
    {"overlong_f0_high", "\xF0\x8F\xBF\xBF", "~~~~"},
    {"surrogate_low", "\xED\xA0\x80", "~~~"},
    {"surrogate_high", "\xED\xBF\xBF", "~~~"},
    {"last_before_surrogates", "\xED\x9F\xBF", "\xED\x9F\xBF"},
    {"past_10ffff", "\xF4\x90\x80\x80", "~~~~"},
    {"max_code_point", "\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},
    {"f5_never_leads", "\xF5\x80", "~~"},
    {"ff", "\xFF", "~"},
    {"five_byte_form", "\xF8\x88\x80\x80\x80", "~~~~~"},
    {"truncated_3_then_ascii",
     "\xE2\x82"
     "A",
     "~A"},
    {"truncated_4_then_ascii",
     "\xF0\x9F\x98"
     "A",
     "~A"},
    {"truncated_then_whole", "\xE2\x82\xE2\x82\xAC", "~\xE2\x82\xAC"},
    {"bad_second_byte_is_reread", "\xE2(\xA1", "~(~"},
    {"bad_third_byte_is_reread", "\xF0(\x8C(", "~(~("},
    {"truncated_at_end_2", "ok\xC3", "ok~"},
    {"truncated_at_end_3", "\xE2\x82", "~"},
    {"truncated_at_end_4", "\xF0\x9F\x98", "~"},
};

std::string Tildes(absl::string_view text) {
  return absl::StrReplaceAll(text, {{kReplacement, "~"}});
}

class Utf8RepairTest : public ::testing::TestWithParam<Case> {};

TEST_P(Utf8RepairTest, ReplacesEachMaximalSubpartWithOneReplacementCharacter) {
  const std::string out = ReplaceInvalid(GetParam().input);
  EXPECT_EQ(Tildes(out), GetParam().expected);
  EXPECT_TRUE(Validate(out).ok());
}

TEST_P(Utf8RepairTest, StreamingByteByByteGivesTheSameText) {
  Utf8Repair repair;
  std::string out;
  for (char c : GetParam().input) {
    std::string piece;
    repair.Add(absl::string_view(&c, 1), &piece);
    EXPECT_TRUE(Validate(piece).ok()) << "a piece split a character";
    out += piece;
  }
  repair.Flush(&out);
  EXPECT_EQ(Tildes(out), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Table, Utf8RepairTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(Utf8RepairStreamTest, HoldsAnIncompleteCharacterUntilItCompletesOrEnds) {
  Utf8Repair repair;
  std::string out;
  repair.Add("\xE2\x82", &out);
  EXPECT_EQ(out, "");
  EXPECT_TRUE(repair.holding());
  repair.Add("\xAC!", &out);
  EXPECT_EQ(out, "\xE2\x82\xAC!");
  repair.Add("\xF0\x9F", &out);
  repair.Flush(&out);
  EXPECT_EQ(Tildes(out), "\xE2\x82\xAC!~");
  EXPECT_FALSE(repair.holding());
  repair.Flush(&out);  // nothing more
  EXPECT_EQ(Tildes(out), "\xE2\x82\xAC!~");
}

TEST(Utf8RepairStreamTest, RandomBytesSplitAnywhereRepairAlikeAndValid) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes(rng() % 24, '\0');
    for (char& c : bytes) {
      // Mostly bytes around the interesting boundaries.
      const uint32_t r = rng();
      c = static_cast<char>(r % 3 == 0 ? 0x80 + (r >> 8) % 0x40
                                       : (r % 3 == 1 ? 0xC0 + (r >> 8) % 0x40 : r >> 8));
    }
    const std::string whole = ReplaceInvalid(bytes);
    ASSERT_TRUE(Validate(whole).ok()) << trial;
    Utf8Repair repair;
    std::string streamed;
    size_t pos = 0;
    while (pos < bytes.size()) {
      const size_t n = 1 + rng() % 4;
      repair.Add(absl::string_view(bytes).substr(pos, n), &streamed);
      pos += n;
    }
    repair.Flush(&streamed);
    ASSERT_EQ(streamed, whole) << trial;
    if (Validate(bytes).ok()) {
      ASSERT_EQ(whole, bytes) << "well-formed text must pass unchanged, trial " << trial;
    }
  }
}

}  // namespace
}  // namespace tandem::utf8
