// Conversions between the wire messages of tandem.v1 and the plain structs of core/, in one
// place so handlers stay thin.
#ifndef TANDEM_SERVICES_COMMON_PROTO_CONVERT_H_
#define TANDEM_SERVICES_COMMON_PROTO_CONVERT_H_

#include <vector>

#include "core/generation/sampler.h"
#include "tandem/v1/common.pb.h"

namespace tandem {

// Unset optional fields take the neutral values: temperature 1, top-p 1, penalty 1, seed 0.
SamplerConfig SamplerConfigFromProto(const v1::SamplingParams& params);
void SamplerConfigToProto(const SamplerConfig& config, v1::SamplingParams* params);

SparseDistribution SparseFromProto(const v1::SparseDistribution& proto);
void SparseToProto(const SparseDistribution& sparse, v1::SparseDistribution* proto);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COMMON_PROTO_CONVERT_H_
