#include "services/coordinator/openai_request.h"

#include "services/coordinator/openai_fields.h"

#include <ostream>
#include <string>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

v1::GenerateRequest FromText(const std::string& text) {
  v1::GenerateRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &r)) << text;
  return r;
}

struct Converts {
  const char* name;
  OpenAiEndpoint endpoint;
  const char* body;
  const char* generate;  // the GenerateRequest in text format
};

void PrintTo(const Converts& c, std::ostream* os) { *os << c.name; }

constexpr OpenAiEndpoint kChat = OpenAiEndpoint::kChatCompletions;
constexpr OpenAiEndpoint kText = OpenAiEndpoint::kCompletions;

const Converts kConverts[] = {
    {"ChatMessagesBecomeAConversationWithTheAssistantPrefix", kChat,
     R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
         {"role": "user", "content": "Hi", "name": "ann"}]})",
     R"(chat { messages { role: "system" content: "Be brief." }
               messages { role: "user" content: "Hi" name: "ann" } add_generation_prompt: true })"},
    {"ChatTextPartsAreJoined", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
         {"type": "text", "text": "b"}]}]})",
     R"(chat { messages { role: "user" content: "ab" } add_generation_prompt: true })"},
    {"SamplingAndLimitsMapToTheirFields", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 7,
         "temperature": 0, "top_p": 0.5, "seed": 42, "top_k": 3, "min_p": 0.25,
         "repetition_penalty": 1.5, "n": 1, "presence_penalty": 0, "frequency_penalty": 0.0,
         "logprobs": false, "user": "u", "logit_bias": {}, "response_format": {"type": "text"}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        max_tokens: 7 sampling { temperature: 0 top_p: 0.5 seed: 42 top_k: 3 min_p: 0.25
        repetition_penalty: 1.5 presence_penalty: 0 frequency_penalty: 0 } n: 1)"},
    {"LogitBiasKeysAreTokenIdStringsAndPenaltiesAreNumbers", kText,
     R"({"model": "m", "prompt": "p", "logit_bias": {"5": 10, "0": -100, "2147483647": 100},
         "presence_penalty": 0.5, "frequency_penalty": -2})",
     R"(text: "p" sampling { logit_bias { key: 0 value: -100 } logit_bias { key: 5 value: 10 }
        logit_bias { key: 2147483647 value: 100 } presence_penalty: 0.5
        frequency_penalty: -2 })"},
    {"NullMeansUnset", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x", "name": null}],
         "temperature": null, "stop": null, "tools": null, "n": null})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true })"},
    {"StopTakesAStringOrAList", kText, R"({"model": "m", "prompt": "p", "stop": ["a", "bc"]})",
     R"(text: "p" stop_strings: "a" stop_strings: "bc")"},
    {"StopAsOneString", kText, R"({"model": "m", "prompt": "p", "stop": "\n"})",
     R"(text: "p" stop_strings: "\n")"},
    // --- #30 n choices ---
    {"SeveralChoices", kText, R"({"model": "m", "prompt": "p", "n": 3})", R"(text: "p" n: 3)"},
    {"SeveralChatChoices", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true } n: 2)"},
    // --- end ---
    {"PromptAsTokenIds", kText, R"({"model": "m", "prompt": [1, 2, 3], "max_tokens": 4})",
     R"(token_ids { ids: [1, 2, 3] } max_tokens: 4)"},
    {"PromptAsOneElementLists", kText, R"({"model": "m", "prompt": [[5, 6]]})",
     R"(token_ids { ids: [5, 6] })"},
    {"PromptAsOneStringInAList", kText, R"({"model": "m", "prompt": ["once"], "best_of": 1,
         "echo": false})",
     R"(text: "once")"},
    {"ToolsAndAToolConversation", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"},
         {"role": "assistant", "content": null, "refusal": null, "annotations": [],
          "tool_calls": [{"id": "call_1", "type": "function",
                          "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
         {"role": "tool", "tool_call_id": "call_1", "content": "42"}],
         "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                    "parameters": {"type": "object"}, "strict": true}}],
         "tool_choice": {"type": "function", "function": {"name": "f"}},
         "parallel_tool_calls": false, "store": false, "metadata": {"k": "v"},
         "service_tier": "auto", "reasoning_effort": "low", "user": "u"})",
     R"(chat { messages { role: "user" content: "x" }
               messages { role: "assistant"
                          tool_calls { id: "call_1" name: "f" arguments: "{\"a\": 1}" } }
               messages { role: "tool" content: "42" tool_call_id: "call_1" }
               add_generation_prompt: true
               tools { name: "f" description: "d" parameters_json: "{\"type\": \"object\"}" } }
        tool_choice { mode: MODE_FUNCTION function: "f" } parallel_tool_calls: false)"},
    {"ToolChoiceModes", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required",
         "tools": [{"type": "function", "function": {"name": "a.b-c_1"}}]})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true
               tools { name: "a.b-c_1" } }
        tool_choice { mode: MODE_REQUIRED })"},
    {"ChatLogprobsWithTop", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": true,
         "top_logprobs": 20})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        logprobs: true top_logprobs: 20)"},
    {"ChatLogprobsFalseIsOff", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": false,
         "top_logprobs": 0})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true })"},
    {"CompletionLogprobsZeroAsksForTheChosenTokens", kText,
     R"({"model": "m", "prompt": "p", "logprobs": 0})", R"(text: "p" logprobs: true)"},
    {"CompletionLogprobsAreTheAlternatives", kText,
     R"({"model": "m", "prompt": "p", "logprobs": 3})",
     R"(text: "p" logprobs: true top_logprobs: 3)"},
    {"TandemExtensions", kText,
     R"({"model": "m", "prompt": "p", "session_id": "s1", "ignore_eos": true,
         "speculation": {"enabled": false, "draft_tokens": 6, "adaptive": true}})",
     R"(text: "p" session_id: "s1" ignore_eos: true
        speculation { enabled: false draft_tokens: 6 adaptive: true })"},
    {"NgramSpeculation", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"method": "ngram", "draft_tokens": 5}})",
     R"(text: "p" speculation { draft_tokens: 5 method: SPECULATION_METHOD_NGRAM })"},
    {"GumbelCoupling", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"coupling": "gumbel"}})",
     R"(text: "p" speculation { coupling: COUPLING_GUMBEL })"},
    {"PipelinedSpeculation", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"pipelined": true, "draft_tokens": 3}})",
     R"(text: "p" speculation { draft_tokens: 3 pipelined: true })"},
    {"StandardCoupling", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"coupling": "standard"}})",
     R"(text: "p" speculation { coupling: COUPLING_STANDARD })"},
    {"MaxTokensEqualToMaxCompletionTokens", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
         "max_completion_tokens": 5})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        max_tokens: 5)"},
    {"ResponseFormatTextIsNoConstraint", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "text"}})", R"(text: "p")"},
    {"ResponseFormatJsonObject", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "response_format": {"type": "json_object"}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        constraint { json_object {} })"},
    {"ResponseFormatJsonSchemaKeepsTheSchemasKeyOrder", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "response_format": {"type": "json_schema", "json_schema": {"name": "person-1",
           "description": "who", "strict": true, "schema": {"type": "object",
           "properties": {"z": {"type": "string"}, "a": {"type": "integer", "minimum": -1.5}},
           "required": ["z", "a"], "additionalProperties": false}}}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        constraint { json_schema { schema:
          "{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"string\"},\"a\":{\"type\":\"integer\",\"minimum\":-1.5}},\"required\":[\"z\",\"a\"],\"additionalProperties\":false}"
        } })"},
    {"JsonSchemaOnCompletionsStrictFalseNullDescription", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "n", "schema": {}, "strict": false, "description": null}}})",
     R"(text: "p" constraint { json_schema { schema: "{}" } })"},
    {"Grammar", kText, R"({"model": "m", "prompt": "p", "grammar": "root ::= \"yes\" | \"no\""})",
     R"(text: "p" constraint { grammar: "root ::= \"yes\" | \"no\"" })"},
    {"Regex", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "regex": "[0-9]{3}"})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        constraint { regex: "[0-9]{3}" })"},
    {"TextFormatBesideAGrammarIsOneConstraint", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "text"}, "grammar": "g",
         "regex": null})",
     R"(text: "p" constraint { grammar: "g" })"},
    {"PredictionAsText", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "prediction": {"type": "content", "content": "int main() {}"}})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true }
        prediction { text: "int main() {}" })"},
    {"ChatTemplateKwargsBeforeTheMessages", kChat,
     R"({"model": "m", "chat_template_kwargs": {"datetime": "Jan 01", "think": true, "n": [1]},
         "messages": [{"role": "user", "content": "x"}]})",
     R"(chat { messages { role: "user" content: "x" } add_generation_prompt: true
               template_kwargs_json: "{\"datetime\": \"Jan 01\", \"think\": true, \"n\": [1]}" })"},
    {"PredictionAsTextPartsOnCompletions", kText,
     R"({"model": "m", "prompt": "p", "prediction": {"type": "content",
         "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}})",
     R"(text: "p" prediction { text: "ab" })"},
};

class ConvertsTest : public ::testing::TestWithParam<Converts> {};

TEST_P(ConvertsTest, GivesTheGenerateRequestAGrpcClientWouldSend) {
  const Converts& c = GetParam();
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(c.body, c.endpoint);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
  const v1::GenerateRequest want = FromText(c.generate);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(r->generate, want))
      << "got:  " << r->generate.ShortDebugString() << "\nwant: " << want.ShortDebugString();
}

INSTANTIATE_TEST_SUITE_P(OpenAiRequest, ConvertsTest, ::testing::ValuesIn(kConverts),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(OpenAiRequestTest, StreamWithUsage) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"model": "m", "prompt": "p", "stream": true, "stream_options": {"include_usage": true}})",
      kText);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->endpoint, kText);
}

struct Refuses {
  const char* name;
  OpenAiEndpoint endpoint;
  const char* body;
  const char* message;  // a part of the kInvalidArgument message
};

void PrintTo(const Refuses& c, std::ostream* os) { *os << c.name; }

const Refuses kRefuses[] = {
    {"MalformedJson", kChat, R"({"model": "m",)", "the body is not JSON: "},
    {"NotAnObject", kChat, R"([1])", "the body: expected a JSON object, got array"},
    {"NoModel", kChat, R"({"messages": [{"role": "user", "content": "x"}]})", "model: is required"},
    {"NoMessages", kChat, R"({"model": "m"})", "messages: is required"},
    {"NoPrompt", kText, R"({"model": "m"})", "prompt: is required"},
    {"EmptyMessages", kChat, R"({"model": "m", "messages": []})", "messages: is empty"},
    {"ModelOfWrongType", kChat, R"({"model": 3, "messages": []})",
     "model: expected a string, got integer"},
    {"TemperatureAsString", kText, R"({"model": "m", "prompt": "p", "temperature": "hot"})",
     "temperature: expected a number, got string"},
    {"TemperatureBeyondFloat", kText, R"({"model": "m", "prompt": "p", "temperature": 1e300})",
     "temperature: 1e+300 is outside the range of a float"},
    {"MaxTokensZero", kText, R"({"model": "m", "prompt": "p", "max_tokens": 0})",
     "max_tokens: 0 is outside [1, 2147483647]"},
    {"MaxTokensAsFloat", kText, R"({"model": "m", "prompt": "p", "max_tokens": 2.5})",
     "max_tokens: expected an integer, got number"},
    {"MaxTokensDisagree", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
         "max_completion_tokens": 6})",
     "max_completion_tokens: differs from the other"},
    {"NegativeSeed", kText, R"({"model": "m", "prompt": "p", "seed": -1})", "seed: -1 is outside"},
    {"PresencePenaltyAbove2", kText, R"({"model": "m", "prompt": "p", "presence_penalty": 2.5})",
     "presence_penalty: 2.5 is outside [-2, 2]"},
    {"FrequencyPenaltyAsString", kText,
     R"({"model": "m", "prompt": "p", "frequency_penalty": "1"})",
     "frequency_penalty: expected a number, got string"},
    {"LogitBiasAsArray", kText, R"({"model": "m", "prompt": "p", "logit_bias": [1]})",
     "logit_bias: expected an object of token ids to biases, got array"},
    {"LogitBiasKeyNotANumber", kText, R"({"model": "m", "prompt": "p", "logit_bias": {"a": 1}})",
     "logit_bias: key 'a' is not a token id"},
    {"LogitBiasNegativeKey", kText, R"({"model": "m", "prompt": "p", "logit_bias": {"-1": 1}})",
     "logit_bias: key '-1' is not a token id"},
    {"LogitBiasLeadingZero", kText, R"({"model": "m", "prompt": "p", "logit_bias": {"05": 1}})",
     "logit_bias: key '05' is not a token id"},
    {"LogitBiasKeyBeyondInt32", kText,
     R"({"model": "m", "prompt": "p", "logit_bias": {"2147483648": 1}})",
     "logit_bias: key '2147483648' is not a token id"},
    {"LogitBiasLongKey", kText,
     R"({"model": "m", "prompt": "p", "logit_bias": {"11111111111111111111111": 1}})",
     "logit_bias: a key is not a token id"},
    {"LogitBiasBelowMinus100", kText, R"({"model": "m", "prompt": "p", "logit_bias": {"3": -101}})",
     "logit_bias: -101 is outside [-100, 100]"},
    {"LogitBiasValueAsString", kText, R"({"model": "m", "prompt": "p", "logit_bias": {"3": "1"}})",
     "logit_bias: expected a number, got string"},
    {"ZeroChoices", kText, R"({"model": "m", "prompt": "p", "n": 0})",
     "n: 0 is outside [1, 2147483647]"},
    {"ChoicesAsFloat", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 1.5})",
     "n: expected an integer, got number"},
    {"BestOfTwo", kText, R"({"model": "m", "prompt": "p", "best_of": 2})",
     "best_of = 2 is not supported by Tandem's OpenAI-compatible API (ask for several choices "
     "with n and rank them yourself)"},
    {"TopLogprobsWithoutLogprobs", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
     "top_logprobs: needs logprobs: true"},
    {"TopLogprobsOverTwenty", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": true,
         "top_logprobs": 21})",
     "top_logprobs: 21 is outside [0, 20]"},
    {"ChatLogprobsNotABool", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": 1})",
     "logprobs: expected a boolean"},
    {"CompletionLogprobsNegative", kText, R"({"model": "m", "prompt": "p", "logprobs": -1})",
     "logprobs: -1 is outside [0, 20]"},
    {"CompletionTopLogprobs", kText, R"({"model": "m", "prompt": "p", "top_logprobs": 2})",
     "field 'top_logprobs' is not supported"},
    {"UnknownField", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "functions": []})",
     "field 'functions' is not supported"},
    {"ToolsOnCompletions", kText, R"({"model": "m", "prompt": "p", "tools": []})",
     "field 'tools' is not supported"},
    {"ToolChoiceUnknownMode", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "any"})",
     "tool_choice: 'any' is not 'none', 'auto', 'required'"},
    {"ToolOfAnotherType", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "tools": [{"type": "code_interpreter"}]})",
     "tools[0].type 'code_interpreter' is not supported"},
    {"ToolNameWithASpace", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "tools": [{"type": "function", "function": {"name": "get weather"}}]})",
     "tools[0].function.name: function name 'get weather' has a character outside "
     "[A-Za-z0-9_.-]"},
    {"ToolNamesRepeated", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "tools": [{"type": "function", "function": {"name": "f"}},
                   {"type": "function", "function": {"name": "f"}}]})",
     "tools[1].function.name: 'f' is not unique"},
    {"ToolParametersNotAnObject", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]})",
     "tools[0].function.parameters: expected an object"},
    {"ToolCallArgumentsAsAnObject", kChat,
     R"({"model": "m", "messages": [{"role": "assistant", "content": null, "tool_calls": [
         {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]})",
     "messages[0].tool_calls[0].function.arguments: expected a string"},
    {"PromptOnChat", kChat, R"({"model": "m", "prompt": "p"})", "field 'prompt' is not supported"},
    {"BatchOfPrompts", kText, R"({"model": "m", "prompt": ["a", "b"]})",
     "a batch of 2 prompts is not supported"},
    {"TokenIdBeyondInt32", kText, R"({"model": "m", "prompt": [1, 4294967296]})",
     "prompt[1]: 4294967296 is outside"},
    {"ImagePart", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
     "messages[0].content[0] of type 'image_url' is not supported"},
    {"MessageWithoutRole", kChat, R"({"model": "m", "messages": [{"content": "x"}]})",
     "messages[0]: has no role"},
    {"MessageWithoutContent", kChat, R"({"model": "m", "messages": [{"role": "user"}]})",
     "messages[0]: has no content"},
    {"AudioInAMessage", kChat,
     R"({"model": "m", "messages": [{"role": "assistant", "content": "a", "audio": {"id": "x"}}]})",
     "messages[0].audio is not supported"},
    {"EmptyStop", kText, R"({"model": "m", "prompt": "p", "stop": ["a", ""]})",
     "stop[1]: is empty"},
    {"StopOfWrongType", kText, R"({"model": "m", "prompt": "p", "stop": [1]})",
     "stop[0]: expected a string, got integer"},
    {"UnknownSpeculationField", kText, R"({"model": "m", "prompt": "p", "speculation": {"k": 2}})",
     "speculation.k: unknown field"},
    {"UnknownSpeculationMethod", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"method": "eagle"}})",
     "speculation.method: is not 'draft_model' or 'ngram'"},
    {"UnknownCoupling", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"coupling": "maximal"}})",
     "speculation.coupling: is not 'standard' or 'gumbel'"},
    {"CouplingNotString", kText, R"({"model": "m", "prompt": "p", "speculation": {"coupling": 2}})",
     "speculation.coupling: expected a string, got integer"},
    {"PipelinedNotBool", kText,
     R"({"model": "m", "prompt": "p", "speculation": {"pipelined": "yes"}})",
     "speculation.pipelined: expected a boolean, got string"},
    {"StreamNotBool", kText, R"({"model": "m", "prompt": "p", "stream": 1})",
     "stream: expected a boolean, got integer"},
    {"UsageWithoutStream", kText,
     R"({"model": "m", "prompt": "p", "stream_options": {"include_usage": true}})",
     "stream_options: is only allowed with stream"},
    {"ResponseFormatNotAnObject", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "response_format": "json_object"})",
     "response_format: expected an object, got string"},
    {"ResponseFormatWithoutType", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"json_schema": {}}})",
     "response_format: has no type"},
    {"UnknownResponseFormatType", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "xml"}})",
     "response_format.type: 'xml' is not 'text', 'json_object' or 'json_schema'"},
    {"ResponseFormatTypeNotAString", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": 1}})",
     "response_format.type: expected a string, got integer"},
    {"UnknownResponseFormatField", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "text", "schema": {}}})",
     "response_format.schema: unknown field (response_format takes type, json_schema)"},
    {"JsonSchemaBesideJsonObject", kText,
     R"({"model": "m", "prompt": "p",
         "response_format": {"type": "json_object", "json_schema": {"name": "n"}}})",
     "response_format.json_schema: is only for type 'json_schema'"},
    {"JsonSchemaMissing", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema"}})",
     "response_format.json_schema: is required with type 'json_schema'"},
    {"JsonSchemaNotAnObject", kText,
     R"({"model": "m", "prompt": "p",
         "response_format": {"type": "json_schema", "json_schema": "{}"}})",
     "response_format.json_schema: expected an object, got string"},
    {"JsonSchemaWithoutName", kText,
     R"({"model": "m", "prompt": "p",
         "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})",
     "response_format.json_schema.name: is required"},
    {"JsonSchemaNameWithASpace", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "my schema", "schema": {}}}})",
     "response_format.json_schema.name: must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-'"},
    {"JsonSchemaNameOver64", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
         "schema": {}}}})",
     "response_format.json_schema.name: must be 1 to 64"},
    {"JsonSchemaWithoutSchema", kText,
     R"({"model": "m", "prompt": "p",
         "response_format": {"type": "json_schema", "json_schema": {"name": "n"}}})",
     "response_format.json_schema.schema: is required"},
    {"JsonSchemaSchemaAsText", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "n", "schema": "{\"type\": \"object\"}"}}})",
     "response_format.json_schema.schema: expected an object, got string"},
    {"JsonSchemaStrictNotABool", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "n", "schema": {}, "strict": "yes"}}})",
     "response_format.json_schema.strict: expected a boolean, got string"},
    {"JsonSchemaUnknownField", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "n", "schema": {}, "format": "x"}}})",
     "response_format.json_schema.format: unknown field (json_schema takes name, schema, strict, "
     "description)"},
    {"GrammarNotAString", kText, R"({"model": "m", "prompt": "p", "grammar": {"root": "x"}})",
     "grammar: expected a string, got object"},
    {"EmptyGrammar", kText, R"({"model": "m", "prompt": "p", "grammar": ""})", "grammar: is empty"},
    {"RegexNotAString", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "regex": 5})",
     "regex: expected a string, got integer"},
    {"SchemaAndGrammar", kText,
     R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema",
         "json_schema": {"name": "n", "schema": {}}}, "grammar": "root ::= \"a\""})",
     "response_format and grammar: a request takes at most one constraint (response_format "
     "json_object or json_schema, grammar, regex)"},
    {"RegexAndJsonObject", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "regex": "a",
         "response_format": {"type": "json_object"}})",
     "regex and response_format: a request takes at most one constraint"},
    {"GrammarAndRegex", kText, R"({"model": "m", "prompt": "p", "grammar": "g", "regex": "r"})",
     "grammar and regex: a request takes at most one constraint"},
    {"Echo", kText, R"({"model": "m", "prompt": "p", "echo": true})", "echo is not supported"},
    {"ChatTemplateKwargsNotAnObject", kChat,
     R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
         "chat_template_kwargs": "datetime=now"})",
     "chat_template_kwargs: expected an object, got string"},
    {"ChatTemplateKwargsWithoutMessages", kChat,
     R"({"model": "m", "chat_template_kwargs": {"datetime": "Jan 01"}})", "messages: is required"},
    {"ChatTemplateKwargsOnCompletions", kText,
     R"({"model": "m", "prompt": "p", "chat_template_kwargs": {}})",
     "field 'chat_template_kwargs' is not supported"},
    {"PredictionNotAnObject", kText, R"({"model": "m", "prompt": "p", "prediction": "x"})",
     "prediction: expected an object, got string"},
    {"PredictionOfAnotherType", kText,
     R"({"model": "m", "prompt": "p", "prediction": {"type": "audio", "content": "x"}})",
     "prediction of type 'audio' is not supported by Tandem's OpenAI-compatible API (only "
     "'content')"},
    {"PredictionWithoutContent", kText,
     R"({"model": "m", "prompt": "p", "prediction": {"type": "content"}})",
     "prediction: has no content"},
    {"DeepNesting", kText,
     "{\"model\": \"m\", \"prompt\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
     "the body is not JSON: "},
};

class RefusesTest : public ::testing::TestWithParam<Refuses> {};

TEST_P(RefusesTest, WithInvalidArgumentNamingTheField) {
  const Refuses& c = GetParam();
  EXPECT_THAT(ParseOpenAiRequest(c.body, c.endpoint).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
}

// error.param: the field a refusal is about, as the HTTP error body names it.
TEST(OpenAiRequestTest, RefusalsNameTheirFieldAsParam) {
  const struct {
    const char* body;
    const char* param;
  } kCases[] = {
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 0})", "n"},
      {R"({"model": "m", "messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "x"})",
       "tool_choice"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "a"})",
       "temperature"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"x": 1}})",
       "logit_bias"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "presence_penalty": 3})",
       "presence_penalty"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
          "frequency_penalty": -2.01})",
       "frequency_penalty"},
  };
  for (const auto& c : kCases) {
    absl::Status status = ParseOpenAiRequest(c.body, OpenAiEndpoint::kChatCompletions).status();
    EXPECT_EQ(openai::ErrorParam(status).value_or("<none>"), c.param) << c.body;
  }
}

INSTANTIATE_TEST_SUITE_P(OpenAiRequest, RefusesTest, ::testing::ValuesIn(kRefuses),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
