#include "core/grammar/tool_call_spec.h"

#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using toolcall::ToolCallFormat;
using toolcall::ToolChoice;
using toolcall::ToolFunction;

std::vector<ToolFunction> WeatherTools() {
  ToolFunction weather;
  weather.name = "get_weather";
  weather.description = "not carried";
  weather.parameters =
      *json::Parse(R"({"type": "object", "properties": {"city": {"type": "string"}}})");
  ToolFunction time;
  time.name = "get.time-2";
  return {weather, time};
}

TEST(ToolCallSpecTest, WritesTheCanonicalText) {
  ToolChoice choice;
  choice.mode = ToolChoice::Mode::kNamed;
  choice.function = "get_weather";
  choice.parallel = false;
  EXPECT_EQ(ToolCallSpecText(ToolCallFormat::kHermes, WeatherTools(), choice),
            R"({"format":"hermes","tools":[{"name":"get_weather","parameters":{"type":"object",)"
            R"("properties":{"city":{"type":"string"}}}},{"name":"get.time-2","parameters":null}],)"
            R"("choice":{"function":"get_weather"},"parallel":false})");
}

TEST(ToolCallSpecTest, RoundTripsEveryFormatAndChoice) {
  std::vector<ToolChoice> choices(4);
  choices[0].mode = ToolChoice::Mode::kAuto;
  choices[1].mode = ToolChoice::Mode::kRequired;
  choices[1].parallel = false;
  choices[2].mode = ToolChoice::Mode::kNamed;
  choices[2].function = "get.time-2";
  choices[3].mode = ToolChoice::Mode::kNone;
  for (ToolCallFormat format : toolcall::AllToolCallFormats()) {
    for (const ToolChoice& choice : choices) {
      const std::string text = ToolCallSpecText(format, WeatherTools(), choice);
      ASSERT_OK_AND_ASSIGN(ToolCallSpec spec, ParseToolCallSpecText(text));
      EXPECT_EQ(spec.format, format) << text;
      ASSERT_EQ(spec.tools.size(), 2u);
      EXPECT_EQ(spec.tools[0].name, "get_weather");
      EXPECT_EQ(spec.tools[0].description, "");
      EXPECT_EQ(spec.tools[0].parameters, WeatherTools()[0].parameters);
      EXPECT_TRUE(spec.tools[1].parameters.is_null());
      EXPECT_EQ(spec.choice.mode, choice.mode);
      EXPECT_EQ(spec.choice.function, choice.function);
      EXPECT_EQ(spec.choice.parallel, choice.parallel);
      EXPECT_EQ(ToolCallSpecText(spec.format, spec.tools, spec.choice), text);
    }
  }
}

TEST(ToolCallSpecTest, RefusesBadTextsNamingTheCulprit) {
  const std::string tools = R"("tools":[{"name":"f","parameters":{}}])";
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{", "not JSON"},
      {"[]", "not a JSON object"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":"auto"})", "'parallel' is missing"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":"auto","parallel":true,"x":1})",
       "unknown member 'x'"},
      {R"({"format":"hermes2",)" + tools + R"(,"choice":"auto","parallel":true})",
       "unknown tool-call format 'hermes2'"},
      {R"({"format":"none",)" + tools + R"(,"choice":"auto","parallel":true})",
       "format 'none' has no tool-call syntax"},
      {R"({"format":1,)" + tools + R"(,"choice":"auto","parallel":true})",
       "'format' is not a string"},
      {R"({"format":"hermes","tools":[],"choice":"auto","parallel":true})", "'tools' is empty"},
      {R"({"format":"hermes","tools":{},"choice":"auto","parallel":true})",
       "'tools' is not an array"},
      {R"({"format":"hermes","tools":[1],"choice":"auto","parallel":true})",
       "tools[0] is not an object"},
      {R"({"format":"hermes","tools":[{"name":"f"}],"choice":"auto","parallel":true})",
       "tools[0]: 'parameters' is missing"},
      {R"({"format":"hermes","tools":[{"name":"a b","parameters":{}}],"choice":"auto",)"
       R"("parallel":true})",
       "tools[0]: function name 'a b' has a character outside [A-Za-z0-9_.-]"},
      {R"({"format":"hermes","tools":[{"name":"","parameters":{}}],"choice":"auto",)"
       R"("parallel":true})",
       "tools[0]: a function name has 1 to 64 bytes, not 0"},
      {R"({"format":"hermes","tools":[{"name":"f","parameters":{}},{"name":"f","parameters":1}],)"
       R"("choice":"auto","parallel":true})",
       "tools[1]: function 'f' is listed twice"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":"sometimes","parallel":true})",
       "'choice' 'sometimes' is not none, auto or required"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":{"function":"g"},"parallel":true})",
       "choice names function 'g', which is not in 'tools'"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":{"name":"f"},"parallel":true})",
       "choice: 'function' is missing"},
      {R"({"format":"hermes",)" + tools + R"(,"choice":"auto","parallel":"yes"})",
       "'parallel' is not a boolean"},
      {std::string(kMaxToolCallSpecBytes + 1, ' '), "past the limit"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseToolCallSpecText(c.text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::AllOf(HasSubstr("tool-call spec: "), HasSubstr(c.message))))
        << c.text.substr(0, 200);
  }
}

TEST(ToolCallSpecTest, RefusesMoreToolsThanTheLimit) {
  std::vector<ToolFunction> tools(kMaxToolCallTools + 1);
  for (size_t i = 0; i < tools.size(); ++i) tools[i].name = "f" + std::to_string(i);
  EXPECT_THAT(ParseToolCallSpecText(ToolCallSpecText(ToolCallFormat::kMistral, tools, {})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("129 functions")));
  tools.pop_back();
  EXPECT_THAT(ParseToolCallSpecText(ToolCallSpecText(ToolCallFormat::kMistral, tools, {})), IsOk());
}

}  // namespace
}  // namespace tandem
