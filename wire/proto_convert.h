// Conversions between the wire messages of tandem.v1 and the plain structs of core/, in one
// place so handlers stay thin.
#ifndef TANDEM_WIRE_PROTO_CONVERT_H_
#define TANDEM_WIRE_PROTO_CONVERT_H_

#include <cstdint>
#include <vector>

#include "core/generation/sampler.h"
#include "core/generation/token_logprobs.h"
#include "core/grammar/constraint_spec.h"
#include "tandem/v1/common.pb.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// The one conversion of sampling settings from the wire, for the coordinator (a client's
// request) and the workers (the coordinator's, which sets every field). An unset field takes
// its default from core/generation/sampling_defaults.h — an unset seed takes `unset_seed` —
// and a set one is used as given, zero included; Sampler::Create then rejects what is out of
// range (kInvalidArgument naming the field, e.g. a negative penalty_window).
SamplerConfig SamplerConfigFromProto(const v1::SamplingParams& params, uint64_t unset_seed = 0);
// Sets every field, so the receiver's defaults never matter. (output_start is not a sampling
// parameter: it travels in DraftRequest/VerifyRequest.output_start.)
void SamplerConfigToProto(const SamplerConfig& config, v1::SamplingParams* params);

// COUPLING_GUMBEL is Coupling::kGumbel; every other value (unspecified, standard, one this
// build does not know) the standard rule. The coordinator refuses unknown values first.
Coupling CouplingFromProto(v1::Coupling coupling);
v1::Coupling CouplingToProto(Coupling coupling);

SparseDistribution SparseFromProto(const v1::SparseDistribution& proto);
void SparseToProto(const SparseDistribution& sparse, v1::SparseDistribution* proto);

// A request's output constraint: the oneof's case is the kind and its text the spec's
// (json_schema.schema for a schema; nothing for json_object). None set is kNone, so an unset
// or empty Constraint is no constraint. Fields of the Constraint this build does not know are
// not looked at here (ValidateGenerateRequest refuses them).
ConstraintSpec ConstraintFromProto(const v1::Constraint& proto);
// kNone clears `proto`.
void ConstraintToProto(const ConstraintSpec& spec, v1::Constraint* proto);

// A worker's logprobs on the wire (token bytes are the coordinator's to add).
void TokenLogprobsToProto(const TokenLogprobs& logprobs, v1::TokenLogprobs* proto);

}  // namespace tandem

#endif  // TANDEM_WIRE_PROTO_CONVERT_H_
