#include "wire/proto_convert.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/generation/sampler.h"
#include "core/generation/sampling_defaults.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct SamplingCase {
  const char* name;
  std::function<void(v1::SamplingParams&)> set;   // the request's fields
  std::function<void(SamplerConfig&)> expect;     // changes to DefaultSamplerConfig(kSeed)
  absl::StatusCode code = absl::StatusCode::kOk;  // what Sampler::Create says
  const char* field = "";                         // named in the error
};

constexpr uint64_t kSeed = 12345;  // what an unset seed becomes

const SamplingCase kCases[] = {
    {"all_unset", [](auto&) {}, [](auto&) {}},
    {"temperature_zero_is_greedy", [](auto& p) { p.set_temperature(0); },
     [](auto& c) { c.temperature = 0; }},
    {"temperature_negative", [](auto& p) { p.set_temperature(-1); },
     [](auto& c) { c.temperature = -1; }, absl::StatusCode::kInvalidArgument, "temperature"},
    {"top_k_zero_disables", [](auto& p) { p.set_top_k(0); }, [](auto& c) { c.top_k = 0; }},
    {"top_k_negative", [](auto& p) { p.set_top_k(-3); }, [](auto& c) { c.top_k = -3; },
     absl::StatusCode::kInvalidArgument, "top_k"},
    {"top_p_one_disables", [](auto& p) { p.set_top_p(1); }, [](auto& c) { c.top_p = 1; }},
    {"top_p_zero", [](auto& p) { p.set_top_p(0); }, [](auto& c) { c.top_p = 0; },
     absl::StatusCode::kInvalidArgument, "top_p"},
    {"top_p_negative", [](auto& p) { p.set_top_p(-0.5f); }, [](auto& c) { c.top_p = -0.5f; },
     absl::StatusCode::kInvalidArgument, "top_p"},
    {"min_p_zero_disables", [](auto& p) { p.set_min_p(0); }, [](auto& c) { c.min_p = 0; }},
    {"min_p_negative", [](auto& p) { p.set_min_p(-0.1f); }, [](auto& c) { c.min_p = -0.1f; },
     absl::StatusCode::kInvalidArgument, "min_p"},
    {"penalty_one_disables", [](auto& p) { p.set_repetition_penalty(1); },
     [](auto& c) { c.repetition_penalty = 1; }},
    {"penalty_zero", [](auto& p) { p.set_repetition_penalty(0); },
     [](auto& c) { c.repetition_penalty = 0; }, absl::StatusCode::kInvalidArgument,
     "repetition_penalty"},
    {"penalty_window_zero_looks_at_nothing", [](auto& p) { p.set_penalty_window(0); },
     [](auto& c) { c.penalty_window = 0; }},
    {"penalty_window_set", [](auto& p) { p.set_penalty_window(7); },
     [](auto& c) { c.penalty_window = 7; }},
    {"penalty_window_negative", [](auto& p) { p.set_penalty_window(-1); },
     [](auto& c) { c.penalty_window = -1; }, absl::StatusCode::kInvalidArgument, "penalty_window"},
    {"seed_zero_is_a_seed", [](auto& p) { p.set_seed(0); }, [](auto& c) { c.seed = 0; }},
    {"seed_set", [](auto& p) { p.set_seed(99); }, [](auto& c) { c.seed = 99; }},
    {"presence_penalty_set", [](auto& p) { p.set_presence_penalty(-2); },
     [](auto& c) { c.presence_penalty = -2; }},
    {"presence_penalty_above_2", [](auto& p) { p.set_presence_penalty(2.5f); },
     [](auto& c) { c.presence_penalty = 2.5f; }, absl::StatusCode::kInvalidArgument,
     "presence_penalty"},
    {"frequency_penalty_set", [](auto& p) { p.set_frequency_penalty(1.5f); },
     [](auto& c) { c.frequency_penalty = 1.5f; }},
    {"logit_bias_by_increasing_id",
     [](auto& p) {
       (*p.mutable_logit_bias())[300] = -100;
       (*p.mutable_logit_bias())[7] = 2;
       (*p.mutable_logit_bias())[41] = -0.5f;
     },
     [](auto& c) {
       c.logit_bias = {{7, 2}, {41, -0.5f}, {300, -100}};
     }},
    {"logit_bias_out_of_range", [](auto& p) { (*p.mutable_logit_bias())[3] = 100.5f; },
     [](auto& c) {
       c.logit_bias = {{3, 100.5f}};
     },
     absl::StatusCode::kInvalidArgument, "logit_bias"},
};

class SamplingFromProtoTest : public ::testing::TestWithParam<SamplingCase> {};

TEST_P(SamplingFromProtoTest, UnsetTakesTheDefaultSetIsUsedAsGiven) {
  const SamplingCase& c = GetParam();
  v1::SamplingParams params;
  c.set(params);
  const SamplerConfig got = SamplerConfigFromProto(params, kSeed);
  SamplerConfig want = DefaultSamplerConfig(kSeed);
  c.expect(want);
  EXPECT_EQ(got.temperature, want.temperature);
  EXPECT_EQ(got.top_k, want.top_k);
  EXPECT_EQ(got.top_p, want.top_p);
  EXPECT_EQ(got.min_p, want.min_p);
  EXPECT_EQ(got.repetition_penalty, want.repetition_penalty);
  EXPECT_EQ(got.penalty_window, want.penalty_window);
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_EQ(got.presence_penalty, want.presence_penalty);
  EXPECT_EQ(got.frequency_penalty, want.frequency_penalty);
  EXPECT_EQ(got.logit_bias, want.logit_bias);
  if (c.code == absl::StatusCode::kOk) {
    EXPECT_OK(Sampler::Create(got, 512).status());
  } else {
    EXPECT_THAT(Sampler::Create(got, 512).status(), StatusIs(c.code, HasSubstr(c.field)));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, SamplingFromProtoTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<SamplingCase>& info) {
                           return std::string(info.param.name);
                         });

// "Unset: X." in the comment above `optional TYPE name = N;` in common.proto's SamplingParams,
// per field name.
absl::flat_hash_map<std::string, std::string> DocumentedDefaults(absl::string_view proto) {
  absl::flat_hash_map<std::string, std::string> found;
  std::string comment;
  for (absl::string_view line : absl::StrSplit(proto, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "//")) {
      absl::StrAppend(&comment, line, " ");
      continue;
    }
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const size_t unset = comment.find("Unset: ");
    if (words.size() >= 3 && words[0] == "optional" && unset != std::string::npos) {
      absl::string_view value = absl::string_view(comment).substr(unset + 7);
      value = value.substr(0, value.find(' '));
      absl::ConsumeSuffix(&value, ".");  // "0.95." -> "0.95"
      found[words[2]] = std::string(value);
    }
    comment.clear();
  }
  return found;
}

TEST(SamplingDefaultsTest, AreTheNumbersTheProtoDocuments) {
  ASSERT_OK_AND_ASSIGN(std::string proto, testing::ReadRepoFile("protos/tandem/v1/common.proto"));
  const absl::flat_hash_map<std::string, std::string> documented = DocumentedDefaults(proto);
  const SamplerConfig d = DefaultSamplerConfig();
  const std::pair<const char*, double> kCode[] = {
      {"temperature", d.temperature},
      {"top_k", d.top_k},
      {"top_p", d.top_p},
      {"min_p", d.min_p},
      {"repetition_penalty", d.repetition_penalty},
      {"penalty_window", d.penalty_window},
      {"presence_penalty", d.presence_penalty},
      {"frequency_penalty", d.frequency_penalty},
  };
  for (const auto& [field, value] : kCode) {
    SCOPED_TRACE(field);
    auto it = documented.find(field);
    ASSERT_NE(it, documented.end()) << "common.proto documents no 'Unset:' for " << field;
    double number = 0;
    ASSERT_TRUE(absl::SimpleAtod(it->second, &number)) << it->second;
    EXPECT_EQ(static_cast<float>(number), static_cast<float>(value));
  }
  for (const auto& [field, text] : documented) {  // no other field documents a default...
    if (field == "seed") continue;                // ...but seed, whose default is words
    EXPECT_TRUE(std::any_of(std::begin(kCode), std::end(kCode),
                            [&](const auto& c) { return field == c.first; }))
        << field << " documents 'Unset: " << text << "' and the test does not check it";
  }
}

TEST(SamplingToProtoTest, RoundTripsEveryFieldWhateverTheDefaults) {
  SamplerConfig config;  // neutral values, unlike the defaults
  config.temperature = 0;
  config.top_k = 0;
  config.top_p = 1;
  config.min_p = 0;
  config.repetition_penalty = 1.25f;
  config.penalty_window = 0;
  config.seed = 0;
  config.logit_bias = {{1, -100}, {9, 3.5f}};
  config.presence_penalty = 0.25f;
  config.frequency_penalty = -1;
  v1::SamplingParams params;
  SamplerConfigToProto(config, &params);
  const SamplerConfig back = SamplerConfigFromProto(params, kSeed);
  EXPECT_EQ(back.logit_bias, config.logit_bias);
  EXPECT_EQ(back.presence_penalty, 0.25f);
  EXPECT_EQ(back.frequency_penalty, -1);
  EXPECT_EQ(back.temperature, 0);
  EXPECT_EQ(back.top_k, 0);
  EXPECT_EQ(back.top_p, 1);
  EXPECT_EQ(back.min_p, 0);
  EXPECT_EQ(back.repetition_penalty, 1.25f);
  EXPECT_EQ(back.penalty_window, 0);
  EXPECT_EQ(back.seed, 0u);
  EXPECT_EQ(back.coupling, Coupling::kStandard);
  config.coupling = Coupling::kGumbel;
  SamplerConfigToProto(config, &params);
  EXPECT_EQ(params.coupling(), v1::COUPLING_GUMBEL);
  EXPECT_EQ(SamplerConfigFromProto(params, kSeed).coupling, Coupling::kGumbel);
}

TEST(CouplingFromProtoTest, OnlyGumbelIsGumbel) {
  EXPECT_EQ(CouplingFromProto(v1::COUPLING_GUMBEL), Coupling::kGumbel);
  EXPECT_EQ(CouplingFromProto(v1::COUPLING_STANDARD), Coupling::kStandard);
  EXPECT_EQ(CouplingFromProto(v1::COUPLING_UNSPECIFIED), Coupling::kStandard);
  EXPECT_EQ(CouplingFromProto(static_cast<v1::Coupling>(9)), Coupling::kStandard);
  EXPECT_EQ(CouplingToProto(Coupling::kStandard), v1::COUPLING_STANDARD);
}

TEST(TokenLogprobsToProtoTest, CarriesTheTokenAndTheAlternativesInOrder) {
  TokenLogprobs l;
  l.chosen = {7, -0.25f};
  l.top = {{3, -0.125f}, {7, -0.25f}};
  v1::TokenLogprobs proto;
  TokenLogprobsToProto(l, &proto);
  EXPECT_EQ(proto.token().token_id(), 7);
  EXPECT_EQ(proto.token().logprob(), -0.25f);
  EXPECT_TRUE(proto.token().token_bytes().empty());
  ASSERT_EQ(proto.top_size(), 2);
  EXPECT_EQ(proto.top(0).token_id(), 3);
  EXPECT_EQ(proto.top(0).logprob(), -0.125f);
  EXPECT_EQ(proto.top(1).token_id(), 7);
}

struct ConstraintCase {
  const char* name;
  const char* proto_text;  // the v1::Constraint, in text format
  ConstraintSpec spec;
};

using Kind = ConstraintSpec::Kind;

const ConstraintCase kConstraintCases[] = {
    {"none", "", {Kind::kNone, ""}},
    {"json_object", "json_object {}", {Kind::kJsonObject, ""}},
    {"json_schema",
     R"(json_schema { schema: "{\"type\": \"integer\"}" })",
     {Kind::kJsonSchema, R"({"type": "integer"})"}},
    {"empty_json_schema", "json_schema {}", {Kind::kJsonSchema, ""}},
    {"grammar",
     R"(grammar: "root ::= \"yes\" | \"no\"")",
     {Kind::kGrammar, R"(root ::= "yes" | "no")"}},
    {"regex", R"(regex: "[0-9]+")", {Kind::kRegex, "[0-9]+"}},
    {"empty_regex", R"(regex: "")", {Kind::kRegex, ""}},
};

class ConstraintProtoTest : public ::testing::TestWithParam<ConstraintCase> {};

TEST_P(ConstraintProtoTest, TheOneofCaseIsTheKindAndItsTextTheSpecs) {
  const ConstraintCase& c = GetParam();
  v1::Constraint proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.proto_text, &proto));
  EXPECT_EQ(ConstraintFromProto(proto), c.spec);
}

TEST_P(ConstraintProtoTest, RoundTripsThroughTheProto) {
  const ConstraintCase& c = GetParam();
  v1::Constraint proto;
  proto.set_regex("left over from before");  // ToProto replaces whatever was there
  ConstraintToProto(c.spec, &proto);
  v1::Constraint expected;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.proto_text, &expected));
  EXPECT_EQ(proto.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(ConstraintFromProto(proto), c.spec);
}

INSTANTIATE_TEST_SUITE_P(Table, ConstraintProtoTest, ::testing::ValuesIn(kConstraintCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConstraintProtoTest, AJsonObjectIgnoresAnyText) {
  EXPECT_EQ(ConstraintFromProto(v1::Constraint()), ConstraintSpec());
  v1::Constraint proto;
  ConstraintToProto({Kind::kJsonObject, "ignored"}, &proto);
  EXPECT_TRUE(proto.has_json_object());
  EXPECT_EQ(ConstraintFromProto(proto), (ConstraintSpec{Kind::kJsonObject, ""}));
}

}  // namespace
}  // namespace tandem
