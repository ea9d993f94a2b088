// The one set of sampling defaults: what a request gets for a setting it leaves unset. The
// conversion from the wire (SamplerConfigFromProto, wire/proto_convert.h) fills
// unset tandem.v1.SamplingParams fields with these, tandem-chat's flags default to them (so
// in-process and --server runs agree), and the Python client leaves what its user does not
// give unset, getting them from the server. protos/tandem/v1/common.proto quotes the numbers
// in its comments: change both together.
//
// These are llama.cpp's well-known chat defaults. They are not SamplerConfig's member
// initialisers, which are neutral (every filter off, T = 1) for code that sets what it needs.
#ifndef TANDEM_CORE_GENERATION_SAMPLING_DEFAULTS_H_
#define TANDEM_CORE_GENERATION_SAMPLING_DEFAULTS_H_

#include <cstdint>

#include "core/generation/sampler.h"

namespace tandem {

struct SamplingDefaults {
  static constexpr float kTemperature = 0.8f;
  static constexpr int32_t kTopK = 40;
  static constexpr float kTopP = 0.95f;
  static constexpr float kMinP = 0.05f;
  static constexpr float kRepetitionPenalty = 1.0f;  // off
  static constexpr int32_t kPenaltyWindow = 64;
  static constexpr float kPresencePenalty = 0.0f;   // off
  static constexpr float kFrequencyPenalty = 0.0f;  // off
};

// A SamplerConfig with every field at its default and the given seed.
inline SamplerConfig DefaultSamplerConfig(uint64_t seed = 0) {
  SamplerConfig config;
  config.temperature = SamplingDefaults::kTemperature;
  config.top_k = SamplingDefaults::kTopK;
  config.top_p = SamplingDefaults::kTopP;
  config.min_p = SamplingDefaults::kMinP;
  config.repetition_penalty = SamplingDefaults::kRepetitionPenalty;
  config.penalty_window = SamplingDefaults::kPenaltyWindow;
  config.seed = seed;
  return config;
}

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SAMPLING_DEFAULTS_H_
