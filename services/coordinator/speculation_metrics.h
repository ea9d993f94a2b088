// A reply's speculation as the OpenAI-compatible API reports it, per response:
//   - metrics.speculative_decoding, vLLM's per-request fields with vLLM's meaning (AIPerf reads
//     these names), over the drafter's guesses (draft model or n-gram):
//       num_spec_steps             rounds that tested the drafter's guesses
//       num_draft_tokens           guesses tested
//       num_accepted_draft_tokens  guesses kept
//       num_spec_tokens            the most guesses a round tested (k; it adapts)
//       mean_acceptance_length     1 + accepted / steps: tokens a step yields (0 without steps)
//       draft_acceptance_rate      accepted / drafted (0 without guesses)
//       acceptance_histogram       [j]: steps that kept exactly j guesses, j = 0..num_spec_tokens
//   - usage.completion_tokens_details.accepted_prediction_tokens / rejected_prediction_tokens:
//     a prediction's guesses kept and refused (OpenAI's Predicted Outputs).
// Guesses a constraint forced and a prediction's are not the drafter's: Tandem's own statistics
// (openai_response.h, "tandem".speculation) count them apart.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_SPECULATION_METRICS_H_
#define TANDEM_SERVICES_COORDINATOR_SPECULATION_METRICS_H_

#include "core/base/json.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// {"speculative_decoding": {...}}, the value of a response's "metrics".
json::Object SpeculationMetrics(const v1::SpeculationStats& stats);

// OpenAI's completion_tokens_details: {"accepted_prediction_tokens": ..,
// "rejected_prediction_tokens": ..}.
json::Object CompletionTokensDetails(const v1::Usage& usage);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_SPECULATION_METRICS_H_
