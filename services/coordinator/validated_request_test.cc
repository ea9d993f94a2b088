#include "services/coordinator/validated_request.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/speculation_defaults.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kFreshSeed = 987654321;

// Values chosen to be told apart from any default: what the request got came from here.
GenerateSettings Settings() {
  GenerateSettings s;
  s.limits.max_prompt_tokens = 8;  // the target's context
  s.vocab_size = 100;
  s.end_of_turn_ids = {2, 3};
  s.default_max_tokens = 77;
  s.default_draft_tokens = 5;
  s.continue_tokens = 6;
  return s;
}

// The target's tokenizer as the test sees it: "hello" is three tokens, "   " none, "down"
// fails as an unreachable target would; every call is recorded.
struct FakeTokenizer {
  std::vector<v1::TokenizeRequest> calls;
  PromptTokenizer AsFunction() {
    return [this](const v1::TokenizeRequest& request) -> absl::StatusOr<v1::TokenizeResponse> {
      calls.push_back(request);
      if (request.text() == "down") return absl::UnavailableError("target-0 is down");
      v1::TokenizeResponse response;
      if (request.text() != "   ") {
        for (int32_t id : {10, 11, 12}) response.add_token_ids(id);
      }
      return response;
    };
  }
};

v1::GenerateRequest Valid() {
  v1::GenerateRequest request;
  request.set_text("hello");
  return request;
}

struct BadRequestCase {
  std::string name;
  std::function<void(v1::GenerateRequest&)> change;  // to Valid()
  absl::StatusCode code;
  std::string message;
  bool tokenized;  // whether the tokenizer was asked before the refusal
};

class RefusesBadRequestTest : public ::testing::TestWithParam<BadRequestCase> {};

TEST_P(RefusesBadRequestTest, WithExactCodeAndMessage) {
  const BadRequestCase& c = GetParam();
  v1::GenerateRequest request = Valid();
  c.change(request);
  FakeTokenizer tokenizer;
  EXPECT_THAT(
      ValidateGenerateRequest(request, Settings(), kFreshSeed, tokenizer.AsFunction()).status(),
      StatusIs(c.code, c.message));
  EXPECT_EQ(tokenizer.calls.size(), c.tokenized ? 1u : 0u);
}

using R = v1::GenerateRequest;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

INSTANTIATE_TEST_SUITE_P(
    Cases, RefusesBadRequestTest,
    ::testing::Values(
        BadRequestCase{"SessionIdTooLong", [](R& r) { r.set_session_id(std::string(129, 's')); },
                       kInvalid, "session_id is 129 bytes; the limit is 128", false},
        BadRequestCase{"MoreTokenIdsThanTheContext",
                       [](R& r) {
                         for (int i = 0; i < 9; ++i) r.mutable_token_ids()->add_ids(1);
                       },
                       absl::StatusCode::kOutOfRange,
                       "prompt of 9 token ids exceeds the context of 8", false},
        BadRequestCase{"EmptyStopString",
                       [](R& r) {
                         r.add_stop_strings("end");
                         r.add_stop_strings("");
                       },
                       kInvalid, "stop_strings[1] is empty", false},
        BadRequestCase{"NegativeTemperature",
                       [](R& r) { r.mutable_sampling()->set_temperature(-1); }, kInvalid,
                       "sampler temperature must be finite and >= 0, got -1", false},
        BadRequestCase{"TopPZero", [](R& r) { r.mutable_sampling()->set_top_p(0); }, kInvalid,
                       "sampler top_p must be in (0, 1], got 0", false},
        BadRequestCase{"NegativePenaltyWindow",
                       [](R& r) { r.mutable_sampling()->set_penalty_window(-2); }, kInvalid,
                       "sampler penalty_window must be >= 0, got -2", false},
        BadRequestCase{"LogitBiasBeyondTheVocabulary",
                       [](R& r) { (*r.mutable_sampling()->mutable_logit_bias())[100] = 1; },
                       kInvalid, "sampler logit_bias token 100 is outside the vocabulary of 100",
                       false},
        BadRequestCase{"NegativeLogitBiasId",
                       [](R& r) { (*r.mutable_sampling()->mutable_logit_bias())[-3] = 1; },
                       kInvalid, "sampler logit_bias token -3 is negative or out of increasing order",
                       false},
        BadRequestCase{"LogitBiasAbove100",
                       [](R& r) { (*r.mutable_sampling()->mutable_logit_bias())[5] = 150; },
                       kInvalid, "sampler logit_bias of token 5 must be in [-100, 100], got 150",
                       false},
        BadRequestCase{"NanLogitBias",
                       [](R& r) { (*r.mutable_sampling()->mutable_logit_bias())[5] = NAN; },
                       kInvalid, "sampler logit_bias of token 5 must be in [-100, 100], got nan",
                       false},
        BadRequestCase{"PresencePenaltyAbove2",
                       [](R& r) { r.mutable_sampling()->set_presence_penalty(2.5f); }, kInvalid,
                       "sampler presence_penalty must be in [-2, 2], got 2.5", false},
        BadRequestCase{"InfiniteFrequencyPenalty",
                       [](R& r) { r.mutable_sampling()->set_frequency_penalty(-INFINITY); },
                       kInvalid, "sampler frequency_penalty must be in [-2, 2], got -inf", false},
        BadRequestCase{"NegativeMaxTokens", [](R& r) { r.set_max_tokens(-1); }, kInvalid,
                       "max_tokens -1 < 0", false},
        BadRequestCase{"DraftTokensAbove16",
                       [](R& r) { r.mutable_speculation()->set_draft_tokens(17); }, kInvalid,
                       "speculation.draft_tokens 17 is outside [0, 16]", false},
        BadRequestCase{"NegativeDraftTokens",
                       [](R& r) { r.mutable_speculation()->set_draft_tokens(-1); }, kInvalid,
                       "speculation.draft_tokens -1 is outside [0, 16]", false},
        BadRequestCase{"TopLogprobsAbove20",
                       [](R& r) {
                         r.set_logprobs(true);
                         r.set_top_logprobs(21);
                       },
                       kInvalid, "top_logprobs 21 is outside [0, 20]", false},
        BadRequestCase{"TopLogprobsWithoutLogprobs", [](R& r) { r.set_top_logprobs(3); }, kInvalid,
                       "top_logprobs needs logprobs set", false},
        BadRequestCase{"UnknownMethod",
                       [](R& r) {
                         r.mutable_speculation()->set_method(static_cast<v1::SpeculationMethod>(9));
                       },
                       kInvalid, "speculation.method 9 is not a method", false},
        BadRequestCase{
            "UnknownCoupling",
            [](R& r) { r.mutable_speculation()->set_coupling(static_cast<v1::Coupling>(7)); },
            kInvalid, "speculation.coupling 7 is not a coupling", false},
        BadRequestCase{"EmptySchema",
                       [](R& r) { r.mutable_constraint()->mutable_json_schema(); }, kInvalid,
                       "constraint.json_schema.schema is empty", false},
        BadRequestCase{"EmptyGrammar", [](R& r) { r.mutable_constraint()->set_grammar(""); },
                       kInvalid, "constraint.grammar is empty", false},
        BadRequestCase{"UnknownConstraintKind",
                       [](R& r) {
                         // Field 99 of Constraint, as a newer client would send a new kind.
                         v1::Constraint* c = r.mutable_constraint();
                         c->GetReflection()->MutableUnknownFields(c)->AddLengthDelimited(
                             99, "lark grammar");
                       },
                       kInvalid,
                       "constraint has a field this server does not know (a newer kind of "
                       "constraint?)",
                       false},
        BadRequestCase{"ConstraintSizeIsALimit",
                       [](R& r) { r.mutable_constraint()->set_regex(std::string(2 << 20, 'a')); },
                       kInvalid, "constraint.regex is 2097152 bytes; the limit is 1048576", false},
        BadRequestCase{"ConstraintBeforePrompt",
                       [](R& r) {
                         r.mutable_constraint()->set_grammar("");
                         r.set_text("down");
                       },
                       kInvalid, "constraint.grammar is empty", false},
        BadRequestCase{"NoPrompt", [](R& r) { r.clear_prompt(); }, kInvalid,
                       "set one of text, chat or token_ids", false},
        BadRequestCase{"EmptyText", [](R& r) { r.set_text(""); }, kInvalid, "prompt text is empty",
                       false},
        BadRequestCase{"ChatWithoutMessages", [](R& r) { r.mutable_chat(); }, kInvalid,
                       "chat has no messages", false},
        BadRequestCase{"NoTokenIds", [](R& r) { r.mutable_token_ids(); }, kInvalid,
                       "prompt has no tokens", false},
        BadRequestCase{"TokenIdPastTheVocabulary",
                       [](R& r) {
                         r.mutable_token_ids()->add_ids(5);
                         r.mutable_token_ids()->add_ids(100);
                       },
                       kInvalid, "prompt token 100 is outside the vocabulary of 100", false},
        BadRequestCase{"NegativeTokenId", [](R& r) { r.mutable_token_ids()->add_ids(-1); },
                       kInvalid, "prompt token -1 is outside the vocabulary of 100", false},
        BadRequestCase{"TextOfNoTokens", [](R& r) { r.set_text("   "); }, kInvalid,
                       "the prompt has no tokens", true},
        BadRequestCase{"TokenizerErrorAsItCame", [](R& r) { r.set_text("down"); },
                       absl::StatusCode::kUnavailable, "target-0 is down", true},
        // The first check that fails is the answer.
        BadRequestCase{"LimitsBeforeSampling",
                       [](R& r) {
                         r.set_session_id(std::string(129, 's'));
                         r.mutable_sampling()->set_temperature(-1);
                       },
                       kInvalid, "session_id is 129 bytes; the limit is 128", false},
        BadRequestCase{"SamplingBeforeMaxTokens",
                       [](R& r) {
                         r.mutable_sampling()->set_top_k(-1);
                         r.set_max_tokens(-1);
                       },
                       kInvalid, "sampler top_k must be >= 0, got -1", false},
        BadRequestCase{"MaxTokensBeforeLogprobs",
                       [](R& r) {
                         r.set_max_tokens(-1);
                         r.set_top_logprobs(3);
                       },
                       kInvalid, "max_tokens -1 < 0", false},
        BadRequestCase{"LogprobsBeforeMethod",
                       [](R& r) {
                         r.set_top_logprobs(3);
                         r.mutable_speculation()->set_method(static_cast<v1::SpeculationMethod>(9));
                       },
                       kInvalid, "top_logprobs needs logprobs set", false},
        BadRequestCase{"MethodBeforePrompt",
                       [](R& r) {
                         r.mutable_speculation()->set_method(static_cast<v1::SpeculationMethod>(9));
                         r.set_text("down");
                       },
                       kInvalid, "speculation.method 9 is not a method", false}),
    [](const ::testing::TestParamInfo<BadRequestCase>& info) { return info.param.name; });

absl::StatusOr<ValidatedRequest> Validate(const v1::GenerateRequest& request,
                                          const GenerateSettings& settings = Settings()) {
  FakeTokenizer tokenizer;
  return ValidateGenerateRequest(request, settings, kFreshSeed, tokenizer.AsFunction());
}

TEST(ValidateGenerateRequestTest, UnsetFieldsTakeTheSettings) {
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(Valid()));
  const RoundParams& p = valid.rounds;
  EXPECT_THAT(p.context, ElementsAre(10, 11, 12));
  EXPECT_EQ(p.max_tokens, 77);
  EXPECT_EQ(p.draft_tokens, 5);
  EXPECT_EQ(p.continue_tokens, 6);
  EXPECT_TRUE(p.speculate);
  EXPECT_FALSE(p.adaptive);
  EXPECT_FALSE(p.pipelined);
  EXPECT_FALSE(p.ngram);
  EXPECT_FALSE(p.ngram_fallback);
  EXPECT_FALSE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 0);
  EXPECT_THAT(p.stop_ids, ElementsAre(2, 3));  // the target's end of turn
  EXPECT_EQ(p.sampler.seed, kFreshSeed);
  EXPECT_EQ(p.sampler.coupling, Coupling::kStandard);
  EXPECT_THAT(valid.stop_strings, IsEmpty());
}

TEST(ValidateGenerateRequestTest, SetFieldsWinOverTheSettings) {
  v1::GenerateRequest request = Valid();
  request.set_max_tokens(9);
  request.mutable_sampling()->set_seed(0);  // a set zero is a seed, not "unset"
  request.mutable_sampling()->set_temperature(0);
  request.mutable_speculation()->set_draft_tokens(3);
  request.mutable_speculation()->set_adaptive(true);
  request.mutable_speculation()->set_pipelined(true);
  request.mutable_speculation()->set_enabled(false);
  request.set_logprobs(true);
  request.set_top_logprobs(4);
  request.add_stop_strings("\n\n");
  request.add_stop_token_ids(7);
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(request));
  const RoundParams& p = valid.rounds;
  EXPECT_EQ(p.max_tokens, 9);
  EXPECT_EQ(p.sampler.seed, 0u);
  EXPECT_EQ(p.sampler.temperature, 0.0f);
  EXPECT_EQ(p.draft_tokens, 3);
  EXPECT_TRUE(p.adaptive);
  EXPECT_TRUE(p.pipelined);
  EXPECT_FALSE(p.speculate);
  EXPECT_TRUE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 4);
  EXPECT_THAT(valid.stop_strings, ElementsAre("\n\n"));
  EXPECT_THAT(p.stop_ids, ElementsAre(7, 2, 3));  // the request's, then the end of turn
}

TEST(ValidateGenerateRequestTest, IgnoreEosKeepsOnlyTheRequestsStopIds) {
  v1::GenerateRequest request = Valid();
  request.set_ignore_eos(true);
  request.add_stop_token_ids(7);
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(request));
  EXPECT_THAT(valid.rounds.stop_ids, ElementsAre(7));
}

TEST(ValidateGenerateRequestTest, AConstrainedOutputStopsAtTheEndOfTurnEvenWithIgnoreEos) {
  v1::GenerateRequest request = Valid();
  request.set_ignore_eos(true);
  request.add_stop_token_ids(7);
  request.mutable_constraint()->set_regex("a+");
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(request));
  EXPECT_THAT(valid.rounds.stop_ids, ElementsAre(7, 2, 3));
}

TEST(ValidateGenerateRequestTest, AdaptiveDraftSettingAppliesToEveryRequest) {
  GenerateSettings settings = Settings();
  settings.adaptive_draft = true;
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(Valid(), settings));
  EXPECT_TRUE(valid.rounds.adaptive);
}

TEST(ValidateGenerateRequestTest, NgramMethodDefaultsToTheNgramDraftersGuesses) {
  v1::GenerateRequest request = Valid();
  request.mutable_speculation()->set_method(v1::SPECULATION_METHOD_NGRAM);
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(request));
  EXPECT_TRUE(valid.rounds.ngram);
  EXPECT_FALSE(valid.rounds.ngram_fallback);
  EXPECT_EQ(valid.rounds.draft_tokens, SpeculationDefaults::kNgramDraftTokens);
}

TEST(ValidateGenerateRequestTest, NgramFallbackOnlyForAnUnspecifiedMethod) {
  GenerateSettings settings = Settings();
  settings.ngram_fallback = true;
  ASSERT_OK_AND_ASSIGN(ValidatedRequest unspecified, Validate(Valid(), settings));
  EXPECT_TRUE(unspecified.rounds.ngram_fallback);
  EXPECT_FALSE(unspecified.rounds.ngram);
  EXPECT_EQ(unspecified.rounds.draft_tokens, 5);

  v1::GenerateRequest request = Valid();
  request.mutable_speculation()->set_method(v1::SPECULATION_METHOD_DRAFT_MODEL);
  ASSERT_OK_AND_ASSIGN(ValidatedRequest draft_model, Validate(request, settings));
  EXPECT_FALSE(draft_model.rounds.ngram_fallback);
}

TEST(ValidateGenerateRequestTest, OpenAiSamplingFieldsAndTheOutputStart) {
  v1::GenerateRequest request = Valid();
  (*request.mutable_sampling()->mutable_logit_bias())[99] = -100;
  (*request.mutable_sampling()->mutable_logit_bias())[0] = 2.5f;
  request.mutable_sampling()->set_presence_penalty(-2);
  request.mutable_sampling()->set_frequency_penalty(0.5f);
  FakeTokenizer tokenizer;
  ASSERT_OK_AND_ASSIGN(
      ValidatedRequest valid,
      ValidateGenerateRequest(request, Settings(), kFreshSeed, tokenizer.AsFunction()));
  const SamplerConfig& s = valid.rounds.sampler;
  EXPECT_THAT(s.logit_bias, ElementsAre(LogitBias{0, 2.5f}, LogitBias{99, -100}));
  EXPECT_EQ(s.presence_penalty, -2);
  EXPECT_EQ(s.frequency_penalty, 0.5f);
  EXPECT_EQ(s.output_start, 3);  // the prompt's three tokens
}

TEST(ValidateGenerateRequestTest, CouplingComesFromSpeculationNotSampling) {
  v1::GenerateRequest request = Valid();
  request.mutable_sampling()->set_coupling(v1::COUPLING_STANDARD);
  request.mutable_speculation()->set_coupling(v1::COUPLING_GUMBEL);
  ASSERT_OK_AND_ASSIGN(ValidatedRequest gumbel, Validate(request));
  EXPECT_EQ(gumbel.rounds.sampler.coupling, Coupling::kGumbel);

  request.mutable_sampling()->set_coupling(v1::COUPLING_GUMBEL);
  request.mutable_speculation()->clear_coupling();
  ASSERT_OK_AND_ASSIGN(ValidatedRequest standard, Validate(request));
  EXPECT_EQ(standard.rounds.sampler.coupling, Coupling::kStandard);
}

TEST(ValidateGenerateRequestTest, NoConstraintIsNone) {
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(Valid()));
  EXPECT_TRUE(valid.constraint.empty());
  v1::GenerateRequest request = Valid();
  request.mutable_constraint();  // set but empty: still none
  ASSERT_OK_AND_ASSIGN(ValidatedRequest empty, Validate(request));
  EXPECT_TRUE(empty.constraint.empty());
}

struct ConstraintCase {
  std::string name;
  std::function<void(v1::Constraint&)> set;
  ConstraintSpec::Kind kind;
  std::string text;
};

class CarriesTheConstraintTest : public ::testing::TestWithParam<ConstraintCase> {};

TEST_P(CarriesTheConstraintTest, AsTheSpecUncompiled) {
  const ConstraintCase& c = GetParam();
  v1::GenerateRequest request = Valid();
  c.set(*request.mutable_constraint());
  ASSERT_OK_AND_ASSIGN(ValidatedRequest valid, Validate(request));
  EXPECT_EQ(valid.constraint.kind, c.kind);
  EXPECT_EQ(valid.constraint.text, c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CarriesTheConstraintTest,
    ::testing::Values(
        ConstraintCase{"JsonObject", [](v1::Constraint& c) { c.mutable_json_object(); },
                       ConstraintSpec::Kind::kJsonObject, ""},
        ConstraintCase{"JsonSchema",
                       [](v1::Constraint& c) {
                         c.mutable_json_schema()->set_schema(R"({"type": "boolean"})");
                       },
                       ConstraintSpec::Kind::kJsonSchema, R"({"type": "boolean"})"},
        // Not judged here: the coordinator's compiler names what is wrong inside.
        ConstraintCase{"BadSchemaIsTheCompilersToJudge",
                       [](v1::Constraint& c) { c.mutable_json_schema()->set_schema("{"); },
                       ConstraintSpec::Kind::kJsonSchema, "{"},
        ConstraintCase{"Grammar", [](v1::Constraint& c) { c.set_grammar(R"(root ::= "a")"); },
                       ConstraintSpec::Kind::kGrammar, R"(root ::= "a")"},
        ConstraintCase{"Regex", [](v1::Constraint& c) { c.set_regex("a|b"); },
                       ConstraintSpec::Kind::kRegex, "a|b"},
        ConstraintCase{"EmptyRegexMatchesOnlyTheEmptyOutput",
                       [](v1::Constraint& c) { c.set_regex(""); }, ConstraintSpec::Kind::kRegex,
                       ""}),
    [](const ::testing::TestParamInfo<ConstraintCase>& info) { return info.param.name; });

TEST(ValidateGenerateRequestTest, TokenIdsAreThePromptWithoutTheTokenizer) {
  v1::GenerateRequest request;
  for (int32_t id : {0, 42, 99}) request.mutable_token_ids()->add_ids(id);
  FakeTokenizer tokenizer;
  ASSERT_OK_AND_ASSIGN(
      ValidatedRequest valid,
      ValidateGenerateRequest(request, Settings(), kFreshSeed, tokenizer.AsFunction()));
  EXPECT_THAT(valid.rounds.context, ElementsAre(0, 42, 99));
  EXPECT_THAT(tokenizer.calls, IsEmpty());
}

TEST(ValidateGenerateRequestTest, TextIsTokenizedWithSpecialTokens) {
  FakeTokenizer tokenizer;
  ASSERT_OK(
      ValidateGenerateRequest(Valid(), Settings(), kFreshSeed, tokenizer.AsFunction()).status());
  ASSERT_EQ(tokenizer.calls.size(), 1u);
  EXPECT_EQ(tokenizer.calls[0].text(), "hello");
  EXPECT_TRUE(tokenizer.calls[0].add_special());
}

TEST(ValidateGenerateRequestTest, ChatIsTokenizedAsItCame) {
  v1::GenerateRequest request;
  v1::ChatMessage* message = request.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content("hi");
  request.mutable_chat()->set_format("chatml");
  FakeTokenizer tokenizer;
  ASSERT_OK_AND_ASSIGN(
      ValidatedRequest valid,
      ValidateGenerateRequest(request, Settings(), kFreshSeed, tokenizer.AsFunction()));
  EXPECT_THAT(valid.rounds.context, ElementsAre(10, 11, 12));
  ASSERT_EQ(tokenizer.calls.size(), 1u);
  EXPECT_EQ(tokenizer.calls[0].chat().SerializeAsString(), request.chat().SerializeAsString());
  EXPECT_FALSE(tokenizer.calls[0].add_special());
}

}  // namespace
}  // namespace tandem
