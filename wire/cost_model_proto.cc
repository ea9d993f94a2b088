#include "wire/cost_model_proto.h"

namespace tandem {

void CostEstimatesToProto(const DraftCostEstimates& e, v1::DraftCostEstimates* out) {
  out->mutable_acceptance_per_position()->Assign(e.acceptance.begin(), e.acceptance.end());
  out->set_draft_token_seconds(e.draft_token_seconds);
  out->set_draft_overhead_seconds(e.draft_overhead_seconds);
  out->set_verify_base_seconds(e.verify_base_seconds);
  out->set_verify_row_seconds(e.verify_row_seconds);
  out->set_verify_overhead_seconds(e.verify_overhead_seconds);
  out->set_alone_token_seconds(e.alone_token_seconds);
  out->set_round_overhead_seconds(e.round_overhead_seconds);
  out->set_chosen_draft_tokens(e.chosen_k);
  out->set_predicted_tokens_per_second(e.predicted_tokens_per_second);
  out->set_predicted_alone_tokens_per_second(e.predicted_alone_tokens_per_second);
}

DraftCostEstimates CostEstimatesFromProto(const v1::DraftCostEstimates& e) {
  DraftCostEstimates out;
  out.acceptance.assign(e.acceptance_per_position().begin(), e.acceptance_per_position().end());
  out.draft_token_seconds = e.draft_token_seconds();
  out.draft_overhead_seconds = e.draft_overhead_seconds();
  out.verify_base_seconds = e.verify_base_seconds();
  out.verify_row_seconds = e.verify_row_seconds();
  out.verify_overhead_seconds = e.verify_overhead_seconds();
  out.alone_token_seconds = e.alone_token_seconds();
  out.round_overhead_seconds = e.round_overhead_seconds();
  out.chosen_k = e.chosen_draft_tokens();
  out.predicted_tokens_per_second = e.predicted_tokens_per_second();
  out.predicted_alone_tokens_per_second = e.predicted_alone_tokens_per_second();
  return out;
}

}  // namespace tandem
