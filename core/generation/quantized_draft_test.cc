// Greedy speculation with a K-quant (or other block-type) draft of an F16 or Q8_0 target
// gives exactly the target's own greedy output: the random-weight fixtures of one model in
// every type (../shared/models/fixtures), so the draft is a real quantization of the target.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/session.h"
#include "core/generation/speculative_session.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedModel;

struct QuantizedDraftCase {
  const char* target;
  const char* draft;
};

void PrintTo(const QuantizedDraftCase& c, std::ostream* os) { *os << c.draft << " for " << c.target; }

class QuantizedDraftTest : public ::testing::TestWithParam<QuantizedDraftCase> {};

TEST_P(QuantizedDraftTest, GreedySpeculationEqualsTheTargetAlone) {
  const std::string dir = "models/fixtures/";
  ASSERT_OK_AND_ASSIGN(const Model* target, SharedModel(dir + GetParam().target));
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(dir + GetParam().draft));
  ThreadPool pool(2);
  SamplerConfig greedy;
  greedy.temperature = 0.0f;
  SessionOptions plain;
  plain.sampler = greedy;
  plain.context_size = 256;
  SpeculativeOptions speculative;
  speculative.session = plain;
  speculative.draft_tokens = 4;
  for (const std::vector<int32_t>& prompt :
       {std::vector<int32_t>{1, 15, 300, 42, 7}, std::vector<int32_t>{1, 401, 2, 99}}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(*target, pool, plain));
    std::vector<int32_t> expected, got;
    ASSERT_OK(alone
                  ->Generate(prompt, 64,
                             [&](int32_t t) {
                               expected.push_back(t);
                               return true;
                             })
                  .status());
    ASSERT_OK_AND_ASSIGN(auto session,
                         SpeculativeSession::Create(*target, *draft, pool, speculative));
    ASSERT_OK_AND_ASSIGN(GenerationResult r, session->Generate(prompt, 64, [&](int32_t t) {
      got.push_back(t);
      return true;
    }));
    EXPECT_EQ(got, expected);
    EXPECT_GT(r.speculation.drafted, 0);
  }
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

}  // namespace
}  // namespace tandem
