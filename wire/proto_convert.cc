#include "wire/proto_convert.h"

#include <algorithm>

#include "core/generation/sampling_defaults.h"

namespace tandem {

SamplerConfig SamplerConfigFromProto(const v1::SamplingParams& params, uint64_t unset_seed) {
  using D = SamplingDefaults;
  SamplerConfig config;
  config.temperature = params.has_temperature() ? params.temperature() : D::kTemperature;
  config.top_k = params.has_top_k() ? params.top_k() : D::kTopK;
  config.top_p = params.has_top_p() ? params.top_p() : D::kTopP;
  config.min_p = params.has_min_p() ? params.min_p() : D::kMinP;
  config.repetition_penalty =
      params.has_repetition_penalty() ? params.repetition_penalty() : D::kRepetitionPenalty;
  config.penalty_window = params.has_penalty_window() ? params.penalty_window() : D::kPenaltyWindow;
  config.seed = params.has_seed() ? params.seed() : unset_seed;
  config.coupling = CouplingFromProto(params.coupling());
  // A proto map's order is unspecified: the sampler takes its entries by increasing id.
  for (const auto& [token, bias] : params.logit_bias()) config.logit_bias.push_back({token, bias});
  std::sort(config.logit_bias.begin(), config.logit_bias.end(),
            [](const LogitBias& a, const LogitBias& b) { return a.token < b.token; });
  config.presence_penalty =
      params.has_presence_penalty() ? params.presence_penalty() : D::kPresencePenalty;
  config.frequency_penalty =
      params.has_frequency_penalty() ? params.frequency_penalty() : D::kFrequencyPenalty;
  return config;
}

void SamplerConfigToProto(const SamplerConfig& config, v1::SamplingParams* params) {
  params->set_temperature(config.temperature);
  params->set_top_k(config.top_k);
  params->set_top_p(config.top_p);
  params->set_min_p(config.min_p);
  params->set_repetition_penalty(config.repetition_penalty);
  params->set_penalty_window(config.penalty_window);
  params->set_seed(config.seed);
  params->set_coupling(CouplingToProto(config.coupling));
  for (const LogitBias& e : config.logit_bias) (*params->mutable_logit_bias())[e.token] = e.bias;
  params->set_presence_penalty(config.presence_penalty);
  params->set_frequency_penalty(config.frequency_penalty);
}

Coupling CouplingFromProto(v1::Coupling coupling) {
  return coupling == v1::COUPLING_GUMBEL ? Coupling::kGumbel : Coupling::kStandard;
}

v1::Coupling CouplingToProto(Coupling coupling) {
  return coupling == Coupling::kGumbel ? v1::COUPLING_GUMBEL : v1::COUPLING_STANDARD;
}

SparseDistribution SparseFromProto(const v1::SparseDistribution& proto) {
  SparseDistribution sparse;
  sparse.ids.assign(proto.token_ids().begin(), proto.token_ids().end());
  sparse.probabilities.assign(proto.probabilities().begin(), proto.probabilities().end());
  return sparse;
}

void SparseToProto(const SparseDistribution& sparse, v1::SparseDistribution* proto) {
  proto->mutable_token_ids()->Assign(sparse.ids.begin(), sparse.ids.end());
  proto->mutable_probabilities()->Assign(sparse.probabilities.begin(), sparse.probabilities.end());
}

namespace {

ReasoningPrefix ReasoningFromProto(v1::ConstraintStart start) {
  switch (start) {
    case v1::CONSTRAINT_START_AFTER_OPEN_REASONING:
      return ReasoningPrefix::kInPrompt;
    case v1::CONSTRAINT_START_AFTER_OPTIONAL_REASONING:
      return ReasoningPrefix::kOptional;
    default:
      return ReasoningPrefix::kNone;
  }
}

v1::ConstraintStart ReasoningToProto(ReasoningPrefix reasoning) {
  switch (reasoning) {
    case ReasoningPrefix::kInPrompt:
      return v1::CONSTRAINT_START_AFTER_OPEN_REASONING;
    case ReasoningPrefix::kOptional:
      return v1::CONSTRAINT_START_AFTER_OPTIONAL_REASONING;
    case ReasoningPrefix::kNone:
      break;
  }
  return v1::CONSTRAINT_START_UNSPECIFIED;
}

ConstraintSpec KindFromProto(const v1::Constraint& proto) {
  using Kind = ConstraintSpec::Kind;
  switch (proto.kind_case()) {
    case v1::Constraint::kJsonObject:
      return {Kind::kJsonObject, ""};
    case v1::Constraint::kJsonSchema:
      return {Kind::kJsonSchema, proto.json_schema().schema()};
    case v1::Constraint::kGrammar:
      return {Kind::kGrammar, proto.grammar()};
    case v1::Constraint::kRegex:
      return {Kind::kRegex, proto.regex()};
    case v1::Constraint::kToolCalls:
      return {Kind::kToolCalls, proto.tool_calls()};
    case v1::Constraint::KIND_NOT_SET:
      break;
  }
  return {};
}

}  // namespace

ConstraintSpec ConstraintFromProto(const v1::Constraint& proto) {
  ConstraintSpec spec = KindFromProto(proto);
  if (!spec.empty()) spec.reasoning = ReasoningFromProto(proto.start());
  return spec;
}

void ConstraintToProto(const ConstraintSpec& spec, v1::Constraint* proto) {
  using Kind = ConstraintSpec::Kind;
  proto->Clear();
  switch (spec.kind) {
    case Kind::kJsonObject:
      proto->mutable_json_object();
      break;
    case Kind::kJsonSchema:
      proto->mutable_json_schema()->set_schema(spec.text);
      break;
    case Kind::kGrammar:
      proto->set_grammar(spec.text);
      break;
    case Kind::kRegex:
      proto->set_regex(spec.text);
      break;
    case Kind::kToolCalls:
      proto->set_tool_calls(spec.text);
      break;
    case Kind::kNone:
      return;
  }
  proto->set_start(ReasoningToProto(spec.reasoning));
}

void TokenLogprobsToProto(const TokenLogprobs& logprobs, v1::TokenLogprobs* proto) {
  proto->mutable_token()->set_token_id(logprobs.chosen.token);
  proto->mutable_token()->set_logprob(logprobs.chosen.logprob);
  for (const TokenLogprob& t : logprobs.top) {
    v1::TokenLogprob* top = proto->add_top();
    top->set_token_id(t.token);
    top->set_logprob(t.logprob);
  }
}

}  // namespace tandem
