#include "services/coordinator/speculation_metrics.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem {
namespace {

v1::SpeculationStats Stats(int rounds, int drafted, int accepted,
                           std::initializer_list<int> per_position) {
  v1::SpeculationStats s;
  s.set_rounds(rounds);
  s.set_drafted_tokens(drafted);
  s.set_accepted_tokens(accepted);
  for (int n : per_position) s.add_accepted_per_position(n);
  return s;
}

struct MetricsCase {
  const char* name;
  v1::SpeculationStats stats;
  std::string expected;
};

class SpeculationMetricsTest : public ::testing::TestWithParam<MetricsCase> {};

TEST_P(SpeculationMetricsTest, HaveVllmsFieldsAndMeaning) {
  EXPECT_EQ(json::Serialize(SpeculationMetrics(GetParam().stats)), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SpeculationMetricsTest,
    ::testing::Values(
        // vLLM's own example: 43 steps of 3 guesses, 10 kept: 39 kept none, 1 one, 3 all.
        MetricsCase{"vllms_example",
                    Stats(43, 129, 10, {4, 3, 3}),
                    R"({"speculative_decoding": {"mean_acceptance_length": 1.2325581395348837, )"
                    R"("draft_acceptance_rate": 0.07751937984496124, )"
                    R"("acceptance_histogram": [39, 1, 0, 3], "num_spec_steps": 43, )"
                    R"("num_draft_tokens": 129, "num_accepted_draft_tokens": 10, )"
                    R"("num_spec_tokens": 3}})"},
        MetricsCase{"no_steps",
                    Stats(0, 0, 0, {}),
                    R"({"speculative_decoding": {"mean_acceptance_length": 0.0, )"
                    R"("draft_acceptance_rate": 0.0, "acceptance_histogram": [0], )"
                    R"("num_spec_steps": 0, "num_draft_tokens": 0, )"
                    R"("num_accepted_draft_tokens": 0, "num_spec_tokens": 0}})"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CompletionTokensDetailsTest, CarryThePredictionsCounts) {
  v1::Usage usage;
  usage.set_accepted_prediction_tokens(120);
  usage.set_rejected_prediction_tokens(7);
  EXPECT_EQ(json::Serialize(CompletionTokensDetails(usage)),
            R"({"accepted_prediction_tokens": 120, "rejected_prediction_tokens": 7})");
}

}  // namespace
}  // namespace tandem
