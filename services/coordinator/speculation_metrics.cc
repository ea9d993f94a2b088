#include "services/coordinator/speculation_metrics.h"

#include <algorithm>
#include <cstdint>

namespace tandem {

json::Object SpeculationMetrics(const v1::SpeculationStats& s) {
  const int64_t steps = s.rounds();
  const int64_t drafted = s.drafted_tokens();
  const int64_t accepted = s.accepted_tokens();
  // accepted_per_position[i]: steps that kept guess i, so steps keeping exactly j guesses are
  // those that kept guess j - 1 but not guess j.
  const int k = s.accepted_per_position_size();
  json::Array histogram;
  for (int j = 0; j <= k; ++j) {
    const int64_t reached = j == 0 ? steps : s.accepted_per_position(j - 1);
    const int64_t went_on = j < k ? s.accepted_per_position(j) : 0;
    histogram.emplace_back(std::max<int64_t>(0, reached - went_on));
  }
  json::Object speculative{
      {"mean_acceptance_length",
       steps > 0 ? 1 + static_cast<double>(accepted) / static_cast<double>(steps) : 0.0},
      {"draft_acceptance_rate",
       drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0},
      {"acceptance_histogram", std::move(histogram)},
      {"num_spec_steps", steps},
      {"num_draft_tokens", drafted},
      {"num_accepted_draft_tokens", accepted},
      {"num_spec_tokens", int64_t{k}}};
  return {{"speculative_decoding", std::move(speculative)}};
}

json::Object CompletionTokensDetails(const v1::Usage& usage) {
  return {{"accepted_prediction_tokens", usage.accepted_prediction_tokens()},
          {"rejected_prediction_tokens", usage.rejected_prediction_tokens()}};
}

}  // namespace tandem
