#include "services/coordinator/text_stream.h"

#include <string>
#include <vector>

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

}  // namespace
}  // namespace tandem
