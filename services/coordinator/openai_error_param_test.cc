// Every 400 a bad chat or completions request can get names its field in error.param: the
// HTTP parser's own refusals and the coordinator's validation's, mapped onto the body's fields
// (openai_error_param.h).
#include "services/coordinator/openai_error_param.h"

#include <ostream>
#include <string>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/choices.h"
#include "services/coordinator/openai_fields.h"
#include "services/coordinator/openai_request.h"
#include "services/coordinator/request_limits.h"
#include "services/coordinator/validated_request.h"

namespace tandem {
namespace {

constexpr OpenAiEndpoint kChat = OpenAiEndpoint::kChatCompletions;
constexpr OpenAiEndpoint kText = OpenAiEndpoint::kCompletions;

struct BadRequest {
  const char* name;
  OpenAiEndpoint endpoint;
  const char* body;
  const char* param;
};

void PrintTo(const BadRequest& c, std::ostream* os) { *os << c.name; }

// What the HTTP API and then the coordinator do with a body, up to the first refusal.
absl::Status Refusal(const BadRequest& c) {
  absl::StatusOr<OpenAiRequest> request = ParseOpenAiRequest(c.body, c.endpoint);
  if (!request.ok()) return request.status();
  GenerateSettings settings;
  settings.vocab_size = 100;
  settings.limits.max_prompt_tokens = 8;
  settings.limits.max_prompt_bytes = 32;
  settings.default_max_tokens = 16;
  settings.default_draft_tokens = 4;
  const auto tokenize = [](const v1::TokenizeRequest&) -> absl::StatusOr<v1::TokenizeResponse> {
    v1::TokenizeResponse ids;
    for (int id : {1, 2, 3}) ids.add_token_ids(id);
    return ids;
  };
  absl::Status status = CheckChoices(request->generate, settings.limits);  // #30 n choices
  if (status.ok()) status = CheckGenerateLimits(request->generate, settings.limits);
  if (status.ok()) status = ValidateGenerateRequest(request->generate, settings, 7, tokenize).status();
  return WithOpenAiParam(status, *request);
}

class ErrorParamTest : public ::testing::TestWithParam<BadRequest> {};

TEST_P(ErrorParamTest, NamesTheField) {
  const BadRequest& c = GetParam();
  const absl::Status status = Refusal(c);
  ASSERT_FALSE(status.ok()) << c.body;
  EXPECT_TRUE(absl::IsInvalidArgument(status) || absl::IsOutOfRange(status)) << status;
  EXPECT_EQ(openai::ErrorParam(status).value_or("(none)"), c.param) << status;
}

#define M R"("model": "m", )"
#define HI R"("messages": [{"role": "user", "content": "hi"}])"
// A prediction of 40 bytes, over the 32-byte prompt limit of these tests.
#define PREDICTED "0123456789012345678901234567890123456789"

const BadRequest kBadRequests[] = {
    // The parser's.
    {"NoModel", kChat, "{" HI "}", "model"},
    {"NoMessages", kChat, R"({"model": "m"})", "messages"},
    {"NoPrompt", kText, R"({"model": "m"})", "prompt"},
    {"EmptyMessages", kChat, "{" M R"("messages": []})", "messages"},
    {"MessageWithoutRole", kChat, "{" M R"("messages": [{"content": "x"}]})", "messages[0]"},
    {"TemperatureNotANumber", kChat, "{" M HI R"(, "temperature": "hot"})", "temperature"},
    {"SeedNotAnInteger", kChat, "{" M HI R"(, "seed": "x"})", "seed"},
    {"EmptyStop", kChat, "{" M HI R"(, "stop": ""})", "stop"},
    {"UnknownField", kChat, "{" M HI R"(, "frobnicate": 1})", "frobnicate"},
    {"StreamOptionsWithoutStream", kChat,
     "{" M HI R"(, "stream_options": {"include_usage": true}})", "stream_options"},
    {"TopLogprobsWithoutLogprobs", kChat, "{" M HI R"(, "top_logprobs": 2})", "top_logprobs"},
    {"UnknownResponseFormat", kChat, "{" M HI R"(, "response_format": {"type": "xml"}})",
     "response_format.type"},
    {"EmptyPrompt", kText, "{" M R"("prompt": []})", "prompt"},
    // The coordinator's (validated_request.h, request_limits.h, the sampler's checks).
    {"NegativeTemperature", kChat, "{" M HI R"(, "temperature": -1})", "temperature"},
    {"TopPZero", kChat, "{" M HI R"(, "top_p": 0})", "top_p"},
    {"MinPOne", kChat, "{" M HI R"(, "min_p": 1})", "min_p"},
    {"RepetitionPenaltyZero", kChat, "{" M HI R"(, "repetition_penalty": 0})",
     "repetition_penalty"},
    {"TooManyStops", kChat,
     "{" M HI R"(, "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})",
     "stop"},
    {"EmptyTextPrompt", kText, "{" M R"("prompt": ""})", "prompt"},
    {"PromptIdOutsideTheVocabulary", kText, "{" M R"("prompt": [5, 100]})", "prompt"},
    {"PromptIdsOverTheContext", kText, "{" M R"("prompt": [1,2,3,4,5,6,7,8,9]})", "prompt"},
    {"ToolsWithoutAToolFormat", kChat,
     "{" M HI R"(, "tools": [{"type": "function", "function": {"name": "f"}}]})", "tools"},
    {"PredictionOverThePromptLimit", kChat,
     "{" M HI R"(, "prediction": {"type": "content", "content": ")" PREDICTED R"("}})",
     "prediction.content"},
    {"ToolChoiceWithoutTools", kChat, "{" M HI R"(, "tool_choice": "required"})",
     "tool_choice"},
    // #30 n choices (choices.h's CheckChoices: over --max-choices, or with a session).
    {"NOverTheLimit", kChat, "{" M HI R"(, "n": 9})", "n"},
    {"NWithASession", kText, "{" M R"("prompt": "hi", "n": 2, "session_id": "s"})", "n"},
};

INSTANTIATE_TEST_SUITE_P(BadRequests, ErrorParamTest, ::testing::ValuesIn(kBadRequests),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(OpenAiParamOfTest, ACompileErrorNamesTheConstraintTheRequestUsed) {
  const absl::Status compile = absl::InvalidArgumentError("/properties/x: unsupported keyword");
  const struct {
    const char* body;
    const char* param;
  } kCases[] = {
      {"{" M HI R"(, "response_format": {"type": "json_object"}})", "response_format"},
      {"{" M HI R"(, "grammar": "root ::= \"a\""})", "grammar"},
      {"{" M HI R"(, "regex": "a+"})", "regex"},
  };
  for (const auto& c : kCases) {
    ASSERT_OK_AND_ASSIGN(const OpenAiRequest request, ParseOpenAiRequest(c.body, kChat));
    EXPECT_EQ(OpenAiParamOf(compile, request).value_or("(none)"), c.param) << c.body;
  }
}

TEST(OpenAiParamOfTest, OtherErrorsAreLeftAlone) {
  ASSERT_OK_AND_ASSIGN(const OpenAiRequest request, ParseOpenAiRequest("{" M HI "}", kChat));
  const absl::Status busy = absl::ResourceExhaustedError("max_tokens: the queue is full");
  EXPECT_EQ(WithOpenAiParam(busy, request), busy);
  EXPECT_FALSE(openai::ErrorParam(WithOpenAiParam(absl::InvalidArgumentError("odd"), request)));
}

#undef M
#undef HI
#undef PREDICTED

}  // namespace
}  // namespace tandem
