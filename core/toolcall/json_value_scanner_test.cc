#include "core/toolcall/json_value_scanner.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

// Feeds `text` and returns the result of the byte where the scanner stopped (its end or a
// failure) and that byte's offset; kConsumed and the size if it never stopped.
std::pair<ScanResult, size_t> Scan(const std::string& text) {
  JsonValueScanner scanner;
  for (size_t i = 0; i < text.size(); ++i) {
    const ScanResult result = scanner.Step(text[i]);
    if (result != ScanResult::kConsumed) return {result, i};
  }
  return {ScanResult::kConsumed, text.size()};
}

TEST(JsonValueScannerTest, FindsTheEndOfEachKindOfValue) {
  struct Case {
    std::string text;
    ScanResult result;
    size_t at;
  };
  const std::vector<Case> cases = {
      {R"({"a": [1, -2.5e+3, true, null, "x\"\\\u00e9"], "b": {}} tail)", ScanResult::kDone, 54},
      {"[]", ScanResult::kDone, 1},
      {"{ }", ScanResult::kDone, 2},
      {"\"s\"", ScanResult::kDone, 2},
      {"false", ScanResult::kDone, 4},
      {"12 ", ScanResult::kDoneBefore, 2},
      {"0,", ScanResult::kDoneBefore, 1},
      {"-0.5e10}", ScanResult::kDoneBefore, 7},
      {"[1, 2", ScanResult::kConsumed, 5},  // incomplete
      {"[1 2]", ScanResult::kFail, 3},
      {"{1: 2}", ScanResult::kFail, 1},
      {"{\"a\" 2}", ScanResult::kFail, 5},
      {"[1,]", ScanResult::kFail, 3},
      {"[01]", ScanResult::kFail, 2},
      {"-x", ScanResult::kFail, 1},
      {"1.e3", ScanResult::kFail, 2},
      {"\"\\x\"", ScanResult::kFail, 2},
      {"\"\\u12g4\"", ScanResult::kFail, 5},
      {"\"a\nb\"", ScanResult::kFail, 2},
      {"tru3", ScanResult::kFail, 3},
      {" 1", ScanResult::kFail, 0},  // the caller strips leading whitespace
      {"[}", ScanResult::kFail, 1},
      {"{\"a\": 1]", ScanResult::kFail, 7},
  };
  for (const Case& c : cases) {
    const auto [result, at] = Scan(c.text);
    EXPECT_EQ(static_cast<int>(result), static_cast<int>(c.result)) << c.text;
    EXPECT_EQ(at, c.at) << c.text;
  }
}

TEST(JsonValueScannerTest, RefusesNestingDeeperThanTheLimit) {
  const std::string at_limit =
      std::string(JsonValueScanner::kMaxDepth, '[') + std::string(JsonValueScanner::kMaxDepth, ']');
  EXPECT_EQ(Scan(at_limit).first, ScanResult::kDone);
  const auto [result, at] = Scan(std::string(JsonValueScanner::kMaxDepth + 1, '['));
  EXPECT_EQ(result, ScanResult::kFail);
  EXPECT_EQ(at, static_cast<size_t>(JsonValueScanner::kMaxDepth));
}

TEST(JsonValueScannerTest, NothingFollowsACompleteValue) {
  JsonValueScanner scanner;
  for (char c : std::string("{}")) scanner.Step(c);
  EXPECT_EQ(scanner.Step(' '), ScanResult::kFail);
  EXPECT_EQ(scanner.Step(','), ScanResult::kFail);
  scanner.Reset();
  EXPECT_FALSE(scanner.started());
  EXPECT_EQ(scanner.Step('1'), ScanResult::kConsumed);
  EXPECT_TRUE(scanner.started());
}

}  // namespace
}  // namespace tandem::toolcall
