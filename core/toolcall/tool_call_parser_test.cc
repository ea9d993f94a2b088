#include "core/toolcall/tool_call_parser.h"

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::toolcall {
namespace {

using ::tandem::testing::StatusIs;

struct Call {
  Call(std::string name, std::string arguments, std::string id = "")
      : name(std::move(name)), arguments(std::move(arguments)), id(std::move(id)) {}
  std::string name;
  std::string arguments;
  std::string id;
};

struct Case {
  std::string label;
  ToolCallFormat format;
  std::string text;
  std::string content;
  std::vector<Call> calls;
};

std::string Describe(const ParsedMessage& message) {
  std::string out = absl::StrCat("content '", message.content, "'");
  for (const ToolCall& call : message.calls) {
    absl::StrAppend(&out, "; call ", call.name, " id '", call.id, "' args '", call.arguments, "'");
  }
  return out;
}

void ExpectMessage(const ParsedMessage& message, const Case& c) {
  EXPECT_EQ(message.content, c.content) << c.label;
  ASSERT_EQ(message.calls.size(), c.calls.size()) << c.label << ": " << Describe(message);
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(message.calls[i].name, c.calls[i].name) << c.label << " call " << i;
    EXPECT_EQ(message.calls[i].arguments, c.calls[i].arguments) << c.label << " call " << i;
    EXPECT_EQ(message.calls[i].id, c.calls[i].id) << c.label << " call " << i;
  }
}

// Feeds `chunks` in order and reassembles the deltas, checking each delta's shape: a call's
// first delta has its name, later ones none, and calls come in index order.
ParsedMessage Stream(ToolCallFormat format, const std::vector<std::string>& chunks) {
  absl::StatusOr<std::unique_ptr<ToolCallParser>> parser = NewToolCallParser(format);
  EXPECT_THAT(parser.status(), ::tandem::testing::IsOk());
  ParsedMessage message;
  auto append = [&](const ParsedDelta& delta) {
    for (const ToolCallDelta& call : delta.calls) {
      const bool first = call.index == static_cast<int>(message.calls.size());
      EXPECT_TRUE(first || call.index + 1 == static_cast<int>(message.calls.size()))
          << "delta for call " << call.index << " after " << message.calls.size() << " calls";
      EXPECT_EQ(!call.name.empty(), first) << "call " << call.index;
      AppendParsedDelta(ParsedDelta{"", {call}}, message);
    }
    message.content += delta.content;
  };
  for (const std::string& chunk : chunks) append((*parser)->Feed(chunk));
  append((*parser)->Finish());
  return message;
}

const std::vector<Case>& Cases() {
  using F = ToolCallFormat;
  static const auto* cases = new std::vector<Case>{
      // Hermes / Qwen2.5.
      {"hermes plain text", F::kHermes, "Hello there.\n", "Hello there.\n", {}},
      {"hermes one call",
       F::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
       "</tool_call>",
       "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"hermes text before a call",
       F::kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
       "Let me check.",
       {{"f", "{}"}}},
      {"hermes parallel calls and text after",
       F::kHermes,
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": [true, null]}}\n</tool_call>\n"
       "Done.\n",
       "Done.\n",
       {{"f", "{\"a\": 1}"}, {"g", "{\"b\": [true, null]}"}}},
      {"hermes call without arguments",
       F::kHermes,
       "<tool_call>{\"name\": \"now\"}</tool_call>",
       "",
       {{"now", "{}"}}},
      {"hermes arguments before the name",
       F::kHermes,
       "<tool_call>{\"arguments\": {\"x\": -1.5e3}, \"name\": \"f\"}</tool_call>",
       "",
       {{"f", "{\"x\": -1.5e3}"}}},
      {"hermes escapes and a marker inside a string",
       F::kHermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"a \\\"<tool_call>\\\" \\u00e9\"}}"
       "</tool_call>",
       "",
       {{"f", "{\"q\": \"a \\\"<tool_call>\\\" \\u00e9\"}"}}},
      {"hermes object without a name is content",
       F::kHermes,
       "<tool_call>{\"nam\": 1}</tool_call>",
       "<tool_call>{\"nam\": 1}</tool_call>",
       {}},
      {"hermes output ending before the arguments is content",
       F::kHermes,
       "ok <tool_call>{\"name\": \"f\"",
       "ok <tool_call>{\"name\": \"f\"",
       {}},
      {"hermes output ending inside the arguments keeps the call",
       F::kHermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2",
       "",
       {{"f", "{\"a\": [1, 2"}}},
      {"hermes marker prefix at the end is content", F::kHermes, "Hi <tool_ca", "Hi <tool_ca", {}},
      {"hermes text where the syntax breaks after a call",
       F::kHermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {}} oops",
       "oops",
       {{"f", "{}"}}},
      {"hermes a second marker inside a broken block",
       F::kHermes,
       "<tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": 7}</tool_call>",
       "<tool_call>",
       {{"f", "7"}}},
      // Mistral.
      {"mistral calls with ids",
       F::kMistral,
       "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abc123XYZ\"}, "
       "{\"name\": \"g\", \"arguments\": {}, \"id\": \"zzzzzzzz9\"}]",
       "",
       {{"f", "{\"a\": 1}", "abc123XYZ"}, {"g", "{}", "zzzzzzzz9"}}},
      {"mistral call without id",
       F::kMistral,
       "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}]",
       "",
       {{"f", "{\"a\": \"b\"}"}}},
      {"mistral single object",
       F::kMistral,
       "[TOOL_CALLS]{\"name\": \"f\", \"arguments\": {}}",
       "",
       {{"f", "{}"}}},
      {"mistral text only", F::kMistral, "No tools needed [TOOL", "No tools needed [TOOL", {}},
      {"mistral broken second element is content",
       F::kMistral,
       "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, {\"name\": 5}]",
       "{\"name\": 5}]",
       {{"f", "{}"}}},
      // Llama 3.x.
      {"llama3 bare call",
       F::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"llama3 python tag and type",
       F::kLlama3Json,
       "<|python_tag|>{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}",
       "",
       {{"f", "{}"}}},
      {"llama3 leading whitespace and arguments key",
       F::kLlama3Json,
       "\n {\"name\": \"f\", \"arguments\": {\"x\": 1}}",
       "",
       {{"f", "{\"x\": 1}"}}},
      {"llama3 calls separated by semicolons",
       F::kLlama3Json,
       "{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"b\": 2}}",
       "",
       {{"f", "{}"}, {"g", "{\"b\": 2}"}}},
      {"llama3 text is content",
       F::kLlama3Json,
       "\n\nThe answer is {\"name\": 1}.",
       "\n\nThe answer is {\"name\": 1}.",
       {}},
      {"llama3 other JSON is content", F::kLlama3Json, "{\"answer\": 42}", "{\"answer\": 42}", {}},
      {"llama3 python tag after text",
       F::kLlama3Json,
       "Checking.<|python_tag|>{\"name\": \"f\", \"parameters\": {}}",
       "Checking.",
       {{"f", "{}"}}},
      // functionary v3.1.
      {"functionary v3.1 calls",
       F::kFunctionaryV31,
       "Sure.<function=get_weather>{\"city\": \"Paris\"}</function>"
       "<function=time>{}</function>",
       "Sure.",
       {{"get_weather", "{\"city\": \"Paris\"}"}, {"time", "{}"}}},
      {"functionary v3.1 bad name is content",
       F::kFunctionaryV31,
       "<function=a b>{}</function>",
       "<function=a b>{}</function>",
       {}},
      // functionary v3.2.
      {"functionary v3.2 first call without >>>",
       F::kFunctionaryV32,
       "get_weather\n{\"city\": \"Paris\"}",
       "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"functionary v3.2 first call with >>>",
       F::kFunctionaryV32,
       ">>>f\n{\"a\": 1}",
       "",
       {{"f", "{\"a\": 1}"}}},
      {"functionary v3.2 text then calls",
       F::kFunctionaryV32,
       "all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}\n>>>time\n{}",
       "Let me check.",
       {{"get_weather", "{\"city\": \"Paris\"}"}, {"time", "{}"}}},
      {"functionary v3.2 text only", F::kFunctionaryV32, "all\nHello there", "Hello there", {}},
      {"functionary v3.2 no recipient is content",
       F::kFunctionaryV32,
       "Hello there",
       "Hello there",
       {}},
      // firefunction-v2.
      {"firefunction calls",
       F::kFirefunctionV2,
       " functools[{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", "
       "\"arguments\": {}}]",
       "",
       {{"f", "{\"a\": 1}"}, {"g", "{}"}}},
      {"firefunction text before",
       F::kFirefunctionV2,
       "Sure functools[{\"name\": \"f\", \"arguments\": {}}]",
       "Sure",
       {{"f", "{}"}}},
      // Command-R.
      {"command r7b action",
       F::kCommandR,
       "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"f\", \"parameters\": "
       "{\"a\": 1}}\n]<|END_ACTION|>",
       "",
       {{"f", "{\"a\": 1}"}}},
      {"command r plus action",
       F::kCommandR,
       "Action: ```json\n[\n    {\n        \"tool_name\": \"f\",\n        \"parameters\": "
       "{\"a\": 1}\n    },\n    {\"tool_name\": \"g\", \"parameters\": {}}\n]\n```",
       "",
       {{"f", "{\"a\": 1}"}, {"g", "{}"}}},
      {"command r7b response",
       F::kCommandR,
       "<|START_RESPONSE|>Hello<|END_RESPONSE|>",
       "Hello",
       {}},
      // DeepSeek-R1.
      {"deepseek one call",
       F::kDeepSeekR1,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
       "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"deepseek parallel calls and text",
       F::kDeepSeekR1,
       "I will call.\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n"
       "```json\n{}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n"
       "```json\n{\"b\": 2}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "I will call.",
       {{"f", "{}"}, {"g", "{\"b\": 2}"}}},
      {"deepseek without call begin",
       F::kDeepSeekR1,
       "<｜tool▁calls▁begin｜>function<｜tool▁sep｜>f\n```json\n[1]\n```<｜tool▁call▁end｜>"
       "<｜tool▁calls▁end｜>",
       "",
       {{"f", "[1]"}}},
  };
  return *cases;
}

TEST(ToolCallParserTest, ParsesEachFamilysOutput) {
  for (const Case& c : Cases()) ExpectMessage(ParseToolCalls(c.format, c.text), c);
}

TEST(ToolCallParserTest, EverySplitPointGivesTheWholeTextsResult) {
  for (const Case& c : Cases()) {
    const ParsedMessage whole = ParseToolCalls(c.format, c.text);
    for (size_t split = 0; split <= c.text.size(); ++split) {
      const ParsedMessage streamed =
          Stream(c.format, {c.text.substr(0, split), c.text.substr(split)});
      ASSERT_EQ(Describe(streamed), Describe(whole)) << c.label << " split at " << split;
    }
    std::vector<std::string> bytes;
    for (char ch : c.text) bytes.emplace_back(1, ch);
    ASSERT_EQ(Describe(Stream(c.format, bytes)), Describe(whole)) << c.label << " bytewise";
  }
}

TEST(ToolCallParserTest, RandomChunkingsGiveTheWholeTextsResult) {
  std::mt19937 gen(28);
  for (const Case& c : Cases()) {
    const std::string whole = Describe(ParseToolCalls(c.format, c.text));
    for (int round = 0; round < 20; ++round) {
      std::vector<std::string> chunks;
      for (size_t pos = 0; pos < c.text.size();) {
        const size_t length = std::uniform_int_distribution<size_t>(1, 8)(gen);
        chunks.push_back(c.text.substr(pos, length));
        pos += length;
      }
      ASSERT_EQ(Describe(Stream(c.format, chunks)), whole) << c.label << " round " << round;
    }
  }
}

TEST(ToolCallParserTest, HoldsBackAMarkerPrefixAndAnnouncesTheNameBeforeTheArgumentsEnd) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(ToolCallFormat::kHermes);
  ParsedDelta delta = parser->Feed("Hi <tool_ca");
  EXPECT_EQ(delta.content, "Hi");
  EXPECT_TRUE(delta.calls.empty());
  delta = parser->Feed("ll>\n{\"name\": \"f\", \"arguments\": ");
  EXPECT_EQ(delta.content, "");
  EXPECT_TRUE(delta.calls.empty());
  delta = parser->Feed("{\"city\": \"Pa");
  ASSERT_EQ(delta.calls.size(), 1u);
  EXPECT_EQ(delta.calls[0].index, 0);
  EXPECT_EQ(delta.calls[0].name, "f");
  EXPECT_EQ(delta.calls[0].arguments, "{\"city\": \"Pa");
  delta = parser->Feed("ris\"}}\n</tool_call>");
  ASSERT_EQ(delta.calls.size(), 1u);
  EXPECT_EQ(delta.calls[0].name, "");
  EXPECT_EQ(delta.calls[0].arguments, "ris\"}");
  delta = parser->Finish();
  EXPECT_EQ(delta.content, "");
  EXPECT_TRUE(delta.calls.empty());
}

TEST(ToolCallParserTest, NonMarkerTextIsReleasedAsSoonAsItCannotBeAMarker) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(ToolCallFormat::kHermes);
  EXPECT_EQ(parser->Feed("a <tool").content, "a");
  EXPECT_EQ(parser->Feed("s> b").content, " <tools> b");
  EXPECT_EQ(parser->Finish().content, "");
}

TEST(ToolCallParserTest, Llama3HoldsOnlyWhileTheMessageMayBeACall) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(ToolCallFormat::kLlama3Json);
  EXPECT_EQ(parser->Feed("  ").content, "");
  EXPECT_EQ(parser->Feed("{").content, "");
  EXPECT_EQ(parser->Feed("\"answer\": ").content, "  {\"answer\":");
  EXPECT_EQ(parser->Feed("4").content, " 4");
  EXPECT_EQ(parser->Finish().content, "");
}

TEST(ToolCallParserTest, MistralIdBeforeTheArgumentsComesInTheFirstDelta) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(ToolCallFormat::kMistral);
  ParsedDelta delta =
      parser->Feed("[TOOL_CALLS][{\"name\": \"f\", \"id\": \"abcdefghi\", \"arguments\": {");
  ASSERT_EQ(delta.calls.size(), 1u);
  EXPECT_EQ(delta.calls[0].id, "abcdefghi");
  EXPECT_EQ(delta.calls[0].name, "f");
  EXPECT_EQ(delta.calls[0].arguments, "{");
}

TEST(ToolCallParserTest, MistralIdAfterTheArgumentsComesInALaterDelta) {
  std::unique_ptr<ToolCallParser> parser = *NewToolCallParser(ToolCallFormat::kMistral);
  ParsedDelta delta = parser->Feed("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}");
  ASSERT_EQ(delta.calls.size(), 1u);
  EXPECT_EQ(delta.calls[0].id, "");
  delta = parser->Feed(", \"id\": \"abcdefghi\"}]");
  ASSERT_EQ(delta.calls.size(), 1u);
  EXPECT_EQ(delta.calls[0].index, 0);
  EXPECT_EQ(delta.calls[0].name, "");
  EXPECT_EQ(delta.calls[0].id, "abcdefghi");
  EXPECT_EQ(delta.calls[0].arguments, "");
}

TEST(ToolCallParserTest, ArgumentsDeeperThanTheLimitEndWhereTheLimitIs) {
  const std::string text =
      absl::StrCat("<tool_call>{\"name\": \"f\", \"arguments\": ", std::string(200, '['));
  const ParsedMessage message = ParseToolCalls(ToolCallFormat::kHermes, text);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, std::string(128, '['));
  EXPECT_EQ(message.content, std::string(72, '['));
}

TEST(ToolCallParserTest, NoneHasNoParser) {
  EXPECT_THAT(NewToolCallParser(ToolCallFormat::kNone).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("'none'")));
  const ParsedMessage message = ParseToolCalls(ToolCallFormat::kNone, "<tool_call>{}");
  EXPECT_EQ(message.content, "<tool_call>{}");
  EXPECT_TRUE(message.calls.empty());
}

TEST(ToolCallParserTest, EveryFormatHasAParser) {
  for (ToolCallFormat format : AllToolCallFormats()) {
    EXPECT_THAT(NewToolCallParser(format).status(), ::tandem::testing::IsOk())
        << ToolCallFormatName(format);
  }
}

}  // namespace
}  // namespace tandem::toolcall
