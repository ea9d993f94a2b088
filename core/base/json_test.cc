#include "core/base/json.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::json {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct ParseCase {
  std::string text;
  Value expected;
};

TEST(JsonParseTest, ParsesValidDocumentsToExactValues) {
  const std::vector<ParseCase> cases = {
      {"null", Value()},
      {" true ", Value(true)},
      {"\tfalse\r\n", Value(false)},
      {"0", Value(0)},
      {"-0", Value(0)},
      {"42", Value(42)},
      {"-17", Value(-17)},
      {"9223372036854775807", Value(std::numeric_limits<int64_t>::max())},
      {"-9223372036854775808", Value(std::numeric_limits<int64_t>::min())},
      {"9223372036854775808", Value(9223372036854775808.0)},
      {"1.5", Value(1.5)},
      {"-0.25", Value(-0.25)},
      {"1e3", Value(1000.0)},
      {"1E-2", Value(0.01)},
      {"2.5e+1", Value(25.0)},
      {"1e-400", Value(0.0)},
      {R"("")", Value("")},
      {R"("a\"b\\c\/d")", Value("a\"b\\c/d")},
      {R"("\b\f\n\r\t")", Value("\b\f\n\r\t")},
      {R"("\u0041\u00e9\u20AC")", Value("A\u00e9\u20ac")},
      {R"("\ud83d\ude00")", Value("\xF0\x9F\x98\x80")},
      {"\"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\"",
       Value("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80")},
      {R"("\u0000")", Value(std::string(1, '\0'))},
      {"[]", Value(Array{})},
      {"[1, \"two\", [3.5, null]]", Value(Array{1, "two", Array{3.5, nullptr}})},
      {"{}", Value(Object{})},
      {R"({"a": {"b": [true]}})", Value(Object{{"a", Object{{"b", Array{true}}}}})},
  };
  for (const ParseCase& c : cases) {
    EXPECT_THAT(Parse(c.text), IsOkAndHolds(c.expected)) << c.text;
  }
}

TEST(JsonParseTest, IntegersStayExactAndFractionsBecomeDoubles) {
  ASSERT_OK_AND_ASSIGN(Value big, Parse("1234567890123456789"));
  ASSERT_TRUE(big.is_int());
  EXPECT_EQ(big.as_int(), 1234567890123456789);
  ASSERT_OK_AND_ASSIGN(Value one, Parse("1.0"));
  EXPECT_TRUE(one.is_double());
  ASSERT_OK_AND_ASSIGN(Value exp, Parse("1e2"));
  EXPECT_TRUE(exp.is_double());
}

TEST(JsonParseTest, ObjectsKeepInsertionOrderAndLastDuplicateWins) {
  ASSERT_OK_AND_ASSIGN(Value v, Parse(R"({"z": 1, "a": 2, "m": 3, "a": 4})"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : v.as_object()) keys.push_back(key);
  EXPECT_THAT(keys, ::testing::ElementsAre("z", "a", "m"));
  EXPECT_EQ(*v.as_object().Find("a"), Value(4));
  EXPECT_EQ(v.as_object().Find("q"), nullptr);
}

struct ErrorCase {
  std::string text;
  std::string message;  // the whole message after "JSON parse error at "
};

TEST(JsonParseTest, RejectsInvalidDocumentsWithPositionAndExpectation) {
  const std::vector<ErrorCase> cases = {
      {"", "1:1: expected a value, found end of input"},
      {"  ", "1:3: expected a value, found end of input"},
      {"nul", "1:1: expected 'null'"},
      {"True", "1:1: expected a value (object, array, string, number, true, false or null)"},
      {"[1,]", "1:4: expected a value (object, array, string, number, true, false or null)"},
      {"[1 2]", "1:4: expected ',' or ']' after an array element"},
      {"[1", "1:3: expected ',' or ']' after an array element"},
      {"{\n  \"a\" 1}", "2:7: expected ':' after an object key"},
      {"{\"a\": 1,}", "1:9: expected '\"' to begin an object key"},
      {"{'a': 1}", "1:2: expected '\"' to begin an object key"},
      {"{\"a\": 1 \"b\": 2}", "1:9: expected ',' or '}' after an object member"},
      {"1 2", "1:3: expected end of input after the value"},
      {"01", "1:2: leading zeros are not allowed in numbers"},
      {"-", "1:2: expected a digit"},
      {"1.", "1:3: expected a digit after the decimal point"},
      {".5", "1:1: expected a value (object, array, string, number, true, false or null)"},
      {"1e", "1:3: expected a digit in the exponent"},
      {"1e999", "1:1: number out of the range of a double"},
      {"\"abc", "1:5: expected '\"' to end the string, found end of input"},
      {"\"a\nb\"", "1:3: control characters must be escaped in strings"},
      {R"("\x")", "1:3: expected one of \" \\ / b f n r t u after '\\'"},
      {R"("\u12G4")", "1:6: expected 4 hex digits after \\u"},
      {R"("\udc00")", "1:2: unpaired low surrogate in \\u escape"},
      {R"("\ud800x")", "1:2: high surrogate not followed by a \\u low surrogate"},
      {R"("\ud800\u0041")", "1:2: high surrogate not followed by a \\u low surrogate"},
      {"\"\xC3\xA9\xFF\"", "1:3: invalid UTF-8 in string"},
      {"\"\xC0\xAF\"", "1:2: invalid UTF-8 in string"},          // overlong '/'
      {"\"\xED\xA0\x80\"", "1:2: invalid UTF-8 in string"},      // encoded surrogate
      {"\"\xF4\x90\x80\x80\"", "1:2: invalid UTF-8 in string"},  // above U+10FFFF
      {"\"\xE4\xB8\"", "1:2: invalid UTF-8 in string"},          // truncated
      {"[NaN]", "1:2: expected a value (object, array, string, number, true, false or null)"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(Parse(c.text),
                StatusIs(absl::StatusCode::kInvalidArgument, "JSON parse error at " + c.message))
        << c.text;
  }
}

TEST(JsonParseTest, ColumnsCountCharactersNotBytes) {
  EXPECT_THAT(Parse("[\"\xC3\xA9\xE4\xB8\xAD\" x]"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "JSON parse error at 1:7: expected ',' or ']' after an array element"));
}

TEST(JsonParseTest, LimitsNestingDepth) {
  ParseOptions options;
  options.max_depth = 3;
  EXPECT_THAT(Parse("[[[1]]]", options), IsOkAndHolds(Value(Array{Array{Array{1}}})));
  EXPECT_THAT(Parse("[[{\"a\": [1]}]]", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "JSON parse error at 1:9: nesting deeper than 3 levels"));
  // The default limit stops a hostile document long before the stack would.
  EXPECT_THAT(Parse(std::string(100000, '[')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 256")));
}

struct SerializeCase {
  Value value;
  SerializeOptions options;
  std::string expected;  // from Python's json.dumps with the same options
};

SerializeOptions Indent(int n) {
  SerializeOptions o;
  o.indent = n;
  return o;
}

SerializeOptions Ascii() {
  SerializeOptions o;
  o.ensure_ascii = true;
  return o;
}

SerializeOptions Sorted() {
  SerializeOptions o;
  o.sort_keys = true;
  return o;
}

SerializeOptions Compact() {
  SerializeOptions o;
  o.item_separator = ",";
  o.key_separator = ":";
  return o;
}

TEST(JsonSerializeTest, MatchesPythonJsonDumps) {
  const Value nested = Object{{"b", 1}, {"a", Array{true, nullptr, 2.5}}, {"c", Object{}}};
  const std::vector<SerializeCase> cases = {
      {Value(), {}, "null"},
      {Value(false), {}, "false"},
      {Value(-12), {}, "-12"},
      {Value(1.0), {}, "1.0"},
      {Value(0.1), {}, "0.1"},
      {Value(1e16), {}, "1e+16"},
      {Value(1e15), {}, "1000000000000000.0"},
      {Value(123456789.125), {}, "123456789.125"},
      {Value(0.0001), {}, "0.0001"},
      {Value(0.00001), {}, "1e-05"},
      {Value(-1.5e-7), {}, "-1.5e-07"},
      {Value(1.7976931348623157e308), {}, "1.7976931348623157e+308"},
      {Value(std::numeric_limits<double>::infinity()), {}, "Infinity"},
      {Value(-std::numeric_limits<double>::infinity()), {}, "-Infinity"},
      {Value(std::numeric_limits<double>::quiet_NaN()), {}, "NaN"},
      {Value("a\"b\\c/\n\r\t\b\f\x01\x1f\x7f"),
       {},
       R"("a\"b\\c/\n\r\t\b\f\u0001\u001f)"
       "\x7f\""},
      {Value("caf\xC3\xA9 \xF0\x9F\x98\x80"), {}, "\"caf\xC3\xA9 \xF0\x9F\x98\x80\""},
      {Value("caf\xC3\xA9 \xF0\x9F\x98\x80\x7f"), Ascii(), R"("caf\u00e9 \ud83d\ude00\u007f")"},
      {Value(Array{}), Indent(2), "[]"},
      {Value(Object{}), Indent(2), "{}"},
      {nested, {}, R"({"b": 1, "a": [true, null, 2.5], "c": {}})"},
      {nested, Sorted(), R"({"a": [true, null, 2.5], "b": 1, "c": {}})"},
      {nested, Compact(), R"({"b":1,"a":[true,null,2.5],"c":{}})"},
      {nested, Indent(2),
       "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    2.5\n  ],\n  \"c\": {}\n}"},
      {Value(Array{1, Array{2}}), Indent(0), "[\n1,\n[\n2\n]\n]"},
  };
  for (const SerializeCase& c : cases) {
    EXPECT_EQ(Serialize(c.value, c.options), c.expected) << c.expected;
  }
}

TEST(JsonSerializeTest, RoundTripsThroughParse) {
  const std::string text =
      R"({"name": "get_weather", "parameters": {"type": "object", "properties": )"
      R"({"city": {"type": "string"}}, "required": ["city"]}, "n": [1, -2.5, 1e-07]})";
  ASSERT_OK_AND_ASSIGN(Value v, Parse(text));
  EXPECT_EQ(Serialize(v), text);
}

TEST(JsonObjectTest, SetKeepsPositionAndEraseReindexes) {
  Object o{{"x", 1}, {"y", 2}, {"z", 3}};
  o.Set("y", "two");
  o.Erase("x");
  o["w"] = 4;
  EXPECT_EQ(Serialize(Value(o)), R"({"y": "two", "z": 3, "w": 4})");
  EXPECT_EQ(*o.Find("z"), Value(3));
  EXPECT_FALSE(o.Erase("x"));
  EXPECT_TRUE(o.Contains("w"));
}

TEST(JsonValueTest, NumbersCompareByValueBoolsAreNotNumbersObjectsIgnoreOrder) {
  EXPECT_EQ(Value(1), Value(1.0));
  EXPECT_NE(Value(1), Value(true));
  EXPECT_NE(Value("1"), Value(1));
  EXPECT_EQ(Value(Object{{"a", 1}, {"b", 2}}), Value(Object{{"b", 2}, {"a", 1}}));
  EXPECT_NE(Value(Array{1, 2}), Value(Array{2, 1}));
}

}  // namespace
}  // namespace tandem::json
