// Greedy speculation with a K-quant (or other block-type) draft of an F16 or Q8_0 target
// gives exactly the target's own greedy output: the random-weight fixtures of one model in
// every type (../shared/models/fixtures), so the draft is a real quantization of the target;
// and, for every architecture, an F16 target with a Q4_K_M draft of the same weights
// (tools/make_fixture_model, one seed, two types).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/session.h"
#include "core/generation/speculative_session.h"
#include "core/kernels/matmul.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedModel;

struct QuantizedDraftCase {
  const char* target;
  const char* draft;
};

void PrintTo(const QuantizedDraftCase& c, std::ostream* os) {
  *os << c.draft << " for " << c.target;
}

// Greedy output of `target` alone and with `draft` speculating `k` guesses a round, for two
// prompts and `tokens` new tokens each: equal token for token, and the draft's guesses were
// tried.
void ExpectSpeculationEqualsTargetAlone(const Model& target, const Model& draft, int tokens,
                                        int32_t k = 4) {
  ThreadPool pool(2);
  SamplerConfig greedy;
  greedy.temperature = 0.0f;
  SessionOptions plain;
  plain.sampler = greedy;
  plain.context_size = 256;
  SpeculativeOptions speculative;
  speculative.session = plain;
  speculative.draft_tokens = k;
  for (const std::vector<int32_t>& prompt :
       {std::vector<int32_t>{1, 15, 300, 42, 7}, std::vector<int32_t>{1, 401, 2, 99}}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(target, pool, plain));
    std::vector<int32_t> expected, got;
    ASSERT_OK(alone
                  ->Generate(prompt, tokens,
                             [&](int32_t t) {
                               expected.push_back(t);
                               return true;
                             })
                  .status());
    ASSERT_OK_AND_ASSIGN(auto session,
                         SpeculativeSession::Create(target, draft, pool, speculative));
    ASSERT_OK_AND_ASSIGN(GenerationResult r, session->Generate(prompt, tokens, [&](int32_t t) {
      got.push_back(t);
      return true;
    }));
    EXPECT_EQ(got, expected);
    EXPECT_EQ(static_cast<int>(got.size()), tokens);
    EXPECT_GT(r.speculation.drafted, 0);
    EXPECT_GT(r.speculation.accepted, 0);  // the draft is close enough to be kept sometimes
  }
}

class QuantizedDraftTest : public ::testing::TestWithParam<QuantizedDraftCase> {};

TEST_P(QuantizedDraftTest, GreedySpeculationEqualsTheTargetAlone) {
  const std::string dir = "models/fixtures/";
  ASSERT_OK_AND_ASSIGN(const Model* target, SharedModel(dir + GetParam().target));
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(dir + GetParam().draft));
  ExpectSpeculationEqualsTargetAlone(*target, *draft, 64);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, QuantizedDraftTest,
    ::testing::Values(QuantizedDraftCase{"llama-F16.gguf", "llama-Q4_K_M.gguf"},
                      QuantizedDraftCase{"llama-F16.gguf", "llama-Q2_K.gguf"},
                      QuantizedDraftCase{"llama-Q8_0.gguf", "llama-Q4_K_M.gguf"},
                      QuantizedDraftCase{"llama-Q8_0.gguf", "llama-pure-Q2_K.gguf"},
                      QuantizedDraftCase{"llama-F16.gguf", "llama-IQ4_XS.gguf"},
                      QuantizedDraftCase{"llama-F16.gguf", "llama-Q5_K_M.gguf"}),
    [](const ::testing::TestParamInfo<QuantizedDraftCase>& info) {
      std::string name = std::string(info.param.draft) + "_for_" + info.param.target;
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// --- #31 activations-invariance ---
// A quantized target and draft, each in its own activation precision (issue 31): greedy
// speculation stays exact whatever the draft's mode, because the target's logits of a position
// are bit-identical in its verify batch and alone, in int8 mode as in int16.
struct ModesDraftCase {
  const char* target;
  const char* draft;
  ActivationPrecision target_activations;
  ActivationPrecision draft_activations;
  int32_t k;
};

void PrintTo(const ModesDraftCase& c, std::ostream* os) {
  *os << c.draft << " " << ActivationPrecisionName(c.draft_activations) << " for " << c.target
      << " " << ActivationPrecisionName(c.target_activations) << " k " << c.k;
}

class ActivationModesDraftTest : public ::testing::TestWithParam<ModesDraftCase> {};

TEST_P(ActivationModesDraftTest, GreedySpeculationEqualsTheTargetAlone) {
  const ModesDraftCase& c = GetParam();
  const std::string dir = "models/fixtures/";
  ASSERT_OK_AND_ASSIGN(const Model* target, SharedModel(dir + c.target, c.target_activations));
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(dir + c.draft, c.draft_activations));
  ASSERT_EQ(target->activations(), c.target_activations);
  ASSERT_EQ(draft->activations(), c.draft_activations);
  ExpectSpeculationEqualsTargetAlone(*target, *draft, 64, c.k);
}

// Targets of Q8_0, Q4_0 (and its Q6_K output), Q4_K_M (Q4_K and Q6_K) and IQ4_NL, each with a
// draft of another type; both in int8 mode, and each of the two in int8 beside the other in
// int16; k 1, 4 and 8.
std::vector<ModesDraftCase> ModesDraftCases() {
  constexpr ActivationPrecision kInt8 = ActivationPrecision::kInt8;
  constexpr ActivationPrecision kInt16 = ActivationPrecision::kInt16;
  const std::pair<const char*, const char*> pairs[] = {{"llama-Q8_0.gguf", "llama-Q4_K_M.gguf"},
                                                       {"llama-Q4_0.gguf", "llama-pure-Q2_K.gguf"},
                                                       {"llama-Q4_K_M.gguf", "llama-Q2_K.gguf"},
                                                       {"llama-IQ4_NL.gguf", "llama-Q5_0.gguf"}};
  const std::pair<ActivationPrecision, ActivationPrecision> modes[] = {
      {kInt8, kInt8}, {kInt16, kInt8}, {kInt8, kInt16}};
  std::vector<ModesDraftCase> cases;
  for (const auto& [target, draft] : pairs) {
    for (const auto& [target_mode, draft_mode] : modes) {
      for (int32_t k : {1, 4, 8}) cases.push_back({target, draft, target_mode, draft_mode, k});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ActivationModesDraftTest, ::testing::ValuesIn(ModesDraftCases()),
                         [](const ::testing::TestParamInfo<ModesDraftCase>& info) {
                           const ModesDraftCase& c = info.param;
                           std::string name =
                               std::string(c.draft) + "_" +
                               std::string(ActivationPrecisionName(c.draft_activations)) + "_for_" +
                               c.target + "_" +
                               std::string(ActivationPrecisionName(c.target_activations)) + "_k" +
                               std::to_string(c.k);
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });
// --- end ---

// One architecture's fixture arguments (tools/make_fixture_model).
struct ArchitectureCase {
  const char* name;
  std::vector<std::string> args;
};

void PrintTo(const ArchitectureCase& c, std::ostream* os) { *os << c.name; }

class ArchitectureDraftTest : public ::testing::TestWithParam<ArchitectureCase> {};

// Loads the fixture of `args` written as `type` (same seed, so the same weights before
// rounding to the type).
absl::StatusOr<std::unique_ptr<Model>> FixtureAs(std::vector<std::string> args,
                                                 const std::string& type) {
  ASSIGN_OR_RETURN(std::string vocab, testing::SharedFile("models/stories260K/stories260K.gguf"));
  // Rows of 256 and 512: every matrix takes the K-quant types (no fallback).
  args.insert(args.end(),
              {"--dim", "256", "--heads", "4", "--kv-heads", "2", "--ffn", "512", "--layers", "3",
               "--context", "512", "--seed", "11", "--type", type, "--vocab-from", vocab});
  ASSIGN_OR_RETURN(std::string dir, testing::MakeFixtureModel(args));
  return Model::Load(dir + "/model.gguf");
}

// 128 new tokens: past the gemma fixtures' window of 8 and its ring's rollback slack of 64.
TEST_P(ArchitectureDraftTest, GreedySpeculationWithAQ4KMDraftEqualsTheF16TargetAlone) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> target, FixtureAs(GetParam().args, "f16"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> draft, FixtureAs(GetParam().args, "q4_k_m"));
  EXPECT_EQ(target->config().architecture, draft->config().architecture);
  ExpectSpeculationEqualsTargetAlone(*target, *draft, 128);
}

INSTANTIATE_TEST_SUITE_P(
    EveryArchitecture, ArchitectureDraftTest,
    ::testing::Values(ArchitectureCase{"llama", {"--arch", "llama"}},
                      ArchitectureCase{"llama3", {"--arch", "llama", "--llama3-rope"}},
                      ArchitectureCase{"qwen2", {"--arch", "qwen2"}},
                      ArchitectureCase{"qwen3", {"--arch", "qwen3"}},
                      ArchitectureCase{"phi3", {"--arch", "phi3"}},
                      ArchitectureCase{"gemma2", {"--arch", "gemma2", "--sliding-window", "8"}},
                      ArchitectureCase{"gemma3", {"--arch", "gemma3", "--sliding-window", "8"}}),
    [](const ::testing::TestParamInfo<ArchitectureCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tandem
