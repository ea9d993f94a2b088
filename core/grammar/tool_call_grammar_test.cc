#include "core/grammar/tool_call_grammar.h"

#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/special_token.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using toolcall::ToolCallFormat;
using toolcall::ToolChoice;
using toolcall::ToolFunction;

std::vector<ToolFunction> Tools() {
  ToolFunction weather;
  weather.name = "get_weather";
  weather.parameters = *json::Parse(
      R"({"type": "object", "properties": {"city": {"type": "string"},
          "days": {"type": "integer"}}, "required": ["city"]})");
  ToolFunction time;
  time.name = "get_time";  // parameters null: any object
  return {weather, time};
}

ToolChoice Choice(ToolChoice::Mode mode, bool parallel = true, std::string function = "") {
  ToolChoice choice;
  choice.mode = mode;
  choice.parallel = parallel;
  choice.function = std::move(function);
  return choice;
}

struct Case {
  std::string name;
  ToolCallFormat format;
  ToolChoice choice;
  std::vector<std::string> accepted;
  std::vector<std::string> refused;
};

const ToolChoice kRequired = Choice(ToolChoice::Mode::kRequired);
const ToolChoice kSingle = Choice(ToolChoice::Mode::kRequired, /*parallel=*/false);
const ToolChoice kAuto = Choice(ToolChoice::Mode::kAuto);
const ToolChoice kNamedTime = Choice(ToolChoice::Mode::kNamed, true, "get_time");

// The calls as the families' templates render them (../shared/models/chat_templates).
const std::string kHermesWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}"
    "\n</tool_call>";
const std::string kHermesTime =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
const std::string kMistralWeather =
    "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1B2c3D4e\"}";
const std::string kDeepSeekWeather =
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
    "<｜tool▁call▁end｜>";
const std::string kR7bWeather =
    "[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": "
    "{\"city\": \"Paris\"}}\n]";

std::vector<Case> Cases() {
  const std::string S = SpecialTokenBytes("[TOOL_CALLS]");
  return {
      {"hermes required",
       ToolCallFormat::kHermes,
       kRequired,
       {kHermesWeather, kHermesWeather + "\n" + kHermesTime, kHermesTime + kHermesWeather,
        "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"\"}}\n</tool_call>",
        SpecialTokenBytes("<tool_call>") + "\n{\"name\": \"get_time\", \"arguments\": {}}\n" +
            SpecialTokenBytes("</tool_call>")},
       {"Sure. " + kHermesWeather,
        "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": "
        "\"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"zip\": 1}}\n"
        "</tool_call>",
        kHermesWeather + " done", ""}},
      {"hermes single",
       ToolCallFormat::kHermes,
       kSingle,
       {kHermesTime},
       {kHermesTime + "\n" + kHermesTime}},
      {"hermes auto",
       ToolCallFormat::kHermes,
       kAuto,
       {"", "Just text, no call.", "Let me check.\n" + kHermesWeather,
        "a <tool_call without closing", "Calls: " + kHermesTime + "\n" + kHermesWeather},
       {"text <tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>",
        kHermesWeather + " and then more text", "x" + SpecialTokenBytes("<|im_end|>")}},
      {"hermes named",
       ToolCallFormat::kHermes,
       kNamedTime,
       {kHermesTime},
       {kHermesWeather, kHermesTime + "\n" + kHermesTime}},
      {"llama3 required",
       ToolCallFormat::kLlama3Json,
       kRequired,
       {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
        "{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_time\", \"parameters\": "
        "{\"tz\": \"UTC\"}}"},
       {"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        SpecialTokenBytes("<|python_tag|>") + "{\"name\": \"get_time\", \"parameters\": {}}"}},
      {"llama3 auto",
       ToolCallFormat::kLlama3Json,
       kAuto,
       {"", "Hello there", "  \nThe weather {is} fine",
        SpecialTokenBytes("<|python_tag|>") + "{\"name\": \"get_time\", \"parameters\": {}}",
        "{\"name\": \"get_time\", \"parameters\": {}}"},
       {"{\"name\": \"get_weather\", \"parameters\": {}}", "  {not a call}", "{"}},
      {"mistral required",
       ToolCallFormat::kMistral,
       kRequired,
       {"[TOOL_CALLS]" + kMistralWeather + "]", S + kMistralWeather + "]",
        S + kMistralWeather +
            ", {\"name\": \"get_time\", \"arguments\": {}, \"id\": "
            "\"000000000\"}]"},
       {S + "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
            "\"short\"}]",
        S + "[]", kMistralWeather + "]"}},
      {"mistral single",
       ToolCallFormat::kMistral,
       kSingle,
       {S + kMistralWeather + "]"},
       {S + kMistralWeather + "," + kMistralWeather.substr(1) + "]"}},
      {"mistral auto",
       ToolCallFormat::kMistral,
       kAuto,
       {"The answer is 4.", "Checking. " + S + kMistralWeather + "]"},
       {"Checking. " + S + "[]"}},
      {"functionary v3.1 required",
       ToolCallFormat::kFunctionaryV31,
       kRequired,
       {"<function=get_weather>{\"city\": \"Paris\"}</function>",
        "<function=get_weather>{\"city\": \"Paris\"}</function><function=get_time>{}</function>"},
       {"<function=get_weather>{\"town\": \"Paris\"}</function>",
        "<function=get_weather>{\"city\": \"Paris\"}"}},
      {"functionary v3.1 auto",
       ToolCallFormat::kFunctionaryV31,
       kAuto,
       {"It is sunny.", "Let me see. <function=get_time>{}</function>"},
       {"<function=get_time>{}</function> and text"}},
      {"functionary v3.2 required",
       ToolCallFormat::kFunctionaryV32,
       kRequired,
       {"get_weather\n{\"city\": \"Paris\"}", "get_weather\n{\"city\": \"Paris\"}>>>get_time\n{}"},
       {"all\nHello", ">>>get_time\n{}", "get_time{}"}},
      {"functionary v3.2 auto",
       ToolCallFormat::kFunctionaryV32,
       kAuto,
       {"all\nHello there", "all\nLet me check.>>>get_time\n{}", "get_time\n{}", "all\n"},
       {"Hello", "all\nx>>>all\nmore", "all\nx>>>get_time\n{}>>>oops\n{}"}},
      {"firefunction v2 required",
       ToolCallFormat::kFirefunctionV2,
       kRequired,
       {" functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
        "functools[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"get_time\", "
        "\"arguments\": {}}]"},
       {"functools[]", "call functools[{\"name\": \"get_time\", \"arguments\": {}}]"}},
      {"firefunction v2 auto",
       ToolCallFormat::kFirefunctionV2,
       kAuto,
       {"No call needed.", "Sure functools[{\"name\": \"get_time\", \"arguments\": {}}]"},
       {}},
      {"command-r required",
       ToolCallFormat::kCommandR,
       kRequired,
       {"Action:\n```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        "
        "\"parameters\": {\"city\": \"Paris\"}\n    }\n]```",
        "<|START_ACTION|>" + kR7bWeather + "<|END_ACTION|>",
        SpecialTokenBytes("<|START_ACTION|>") + kR7bWeather + SpecialTokenBytes("<|END_ACTION|>")},
       {"Action:\n```json\n[{\"tool_name\": \"get_weather\", \"parameters\": {}}]```",
        "<|START_ACTION|>[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"P\"}}]"
        "<|END_ACTION|>"}},
      {"command-r auto",
       ToolCallFormat::kCommandR,
       kAuto,
       {SpecialTokenBytes("<|START_RESPONSE|>") + "Hi." + SpecialTokenBytes("<|END_RESPONSE|>"),
        SpecialTokenBytes("<|START_THINKING|>") + "Plan." + SpecialTokenBytes("<|END_THINKING|>") +
            SpecialTokenBytes("<|START_ACTION|>") + kR7bWeather +
            SpecialTokenBytes("<|END_ACTION|>"),
        "I will look.\nAction:\n```json\n[{\"tool_name\": \"get_time\", \"parameters\": {}}]\n```"},
       {"Action: nothing", SpecialTokenBytes("<|END_OF_TURN_TOKEN|>")}},
      {"deepseek-r1 required",
       ToolCallFormat::kDeepSeekR1,
       kRequired,
       {"<｜tool▁calls▁begin｜>" + kDeepSeekWeather + "<｜tool▁calls▁end｜>",
        SpecialTokenBytes("<｜tool▁calls▁begin｜>") + kDeepSeekWeather + "\n" + kDeepSeekWeather +
            SpecialTokenBytes("<｜tool▁calls▁end｜>")},
       {"<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", "<｜tool▁calls▁begin｜>" + kDeepSeekWeather}},
      {"deepseek-r1 auto",
       ToolCallFormat::kDeepSeekR1,
       kAuto,
       {"The weather is fine.",
        "Let me call. <｜tool▁calls▁begin｜>" + kDeepSeekWeather + "<｜tool▁calls▁end｜>"},
       {"<｜tool▁calls▁begin｜>" + kDeepSeekWeather + "<｜tool▁calls▁end｜> more"}},
  };
}

TEST(ToolCallGrammarTest, AcceptsTheFamiliesCallsAndRefusesWrongOnes) {
  for (const Case& c : Cases()) {
    ASSERT_OK_AND_ASSIGN(Grammar grammar, ToolCallGrammar(c.format, Tools(), c.choice));
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(GrammarMatches(grammar, text)) << c.name << " refuses: " << text;
    }
    for (const std::string& text : c.refused) {
      EXPECT_FALSE(GrammarMatches(grammar, text)) << c.name << " accepts: " << text;
    }
  }
}

TEST(ToolCallGrammarTest, SpecTextGivesTheSameGrammar) {
  const std::string text = ToolCallSpecText(ToolCallFormat::kHermes, Tools(), kRequired);
  ASSERT_OK_AND_ASSIGN(Grammar from_text, ToolCallSpecGrammar(text));
  ASSERT_OK_AND_ASSIGN(Grammar direct,
                       ToolCallGrammar(ToolCallFormat::kHermes, Tools(), kRequired));
  EXPECT_EQ(from_text.DebugString(), direct.DebugString());
}

TEST(ToolCallGrammarTest, RefusesWhatHasNoGrammarNamingTheCulprit) {
  std::vector<ToolFunction> bad_schema = Tools();
  bad_schema[0].parameters =
      *json::Parse(R"({"type": "object", "properties": {"a": {"not": {}}}})");
  std::vector<ToolFunction> bad_name = Tools();
  bad_name[1].name = "get time";
  struct Refusal {
    ToolCallFormat format;
    std::vector<ToolFunction> tools;
    ToolChoice choice;
    std::string message;
  };
  const std::vector<Refusal> refusals = {
      {ToolCallFormat::kNone, Tools(), kRequired, "the model has no tool-call format"},
      {ToolCallFormat::kHermes, {}, kRequired, "no tools"},
      {ToolCallFormat::kHermes, Tools(), Choice(ToolChoice::Mode::kNone),
       "tool_choice 'none' leaves the output unconstrained"},
      {ToolCallFormat::kHermes, Tools(), Choice(ToolChoice::Mode::kNamed, true, "f"),
       "names function 'f', which is not a tool"},
      {ToolCallFormat::kMistral, bad_schema, kRequired,
       "tool 'get_weather' parameters: JSON Schema: 'not'"},
      {ToolCallFormat::kMistral, bad_name, kAuto, "function name 'get time'"},
  };
  for (const Refusal& r : refusals) {
    EXPECT_THAT(ToolCallGrammar(r.format, r.tools, r.choice),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(r.message)));
  }
  EXPECT_THAT(ToolCallSpecGrammar("{}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tool-call spec")));
}

}  // namespace
}  // namespace tandem
