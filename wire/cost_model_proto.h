// DraftCostEstimates (core/generation/draft_cost_model.h) to and from the public proto.
#ifndef TANDEM_WIRE_COST_MODEL_PROTO_H_
#define TANDEM_WIRE_COST_MODEL_PROTO_H_

#include "core/generation/draft_cost_model.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

void CostEstimatesToProto(const DraftCostEstimates& e, v1::DraftCostEstimates* out);
DraftCostEstimates CostEstimatesFromProto(const v1::DraftCostEstimates& e);

}  // namespace tandem

#endif  // TANDEM_WIRE_COST_MODEL_PROTO_H_
