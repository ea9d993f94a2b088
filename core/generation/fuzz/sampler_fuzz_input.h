// The sampler fuzzer's input format: fuzz bytes decoded into a vocabulary size, a
// SamplerConfig, a context and finite logits; and the encoder the seed corpus is written with.
//
// Every field is read from the front of the bytes; a value is either one of a table of edge
// values (chosen by one byte) or raw bytes, so that short inputs already reach every edge.
// Missing bytes read as zero: any byte string decodes.
#ifndef TANDEM_CORE_GENERATION_FUZZ_SAMPLER_FUZZ_INPUT_H_
#define TANDEM_CORE_GENERATION_FUZZ_SAMPLER_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/generation/sampler.h"

namespace tandem::fuzzing {

struct SamplerCase {
  int64_t vocab_size = 1;        // 1..512
  SamplerConfig config;          // any values, valid or not
  std::vector<int32_t> context;  // ids in [0, vocab_size)
  std::vector<float> logits;     // vocab_size finite values
  int64_t position = 0;
  double uniform = 0;  // in [0, 1)
};

SamplerCase DecodeSamplerCase(const uint8_t* data, size_t size);

// Logit patterns the encoder can ask for.
enum class LogitPattern : uint8_t {
  kRaw = 0,        // float bits from the input (non-finite ones become 0)
  kAllEqual = 1,   // one value everywhere
  kSmallInts = 2,  // -8..7, many ties
  kExtremes = 3,   // +-1e30, +-3e38 and 0 mixed
};

// Builds inputs that decode to the given values (for seeds).
class SamplerCaseEncoder {
 public:
  SamplerCaseEncoder& Vocab(uint16_t size);
  // Edge-table index for temperature, top_p, min_p, repetition_penalty (see the .cc tables).
  SamplerCaseEncoder& FloatEdge(uint8_t index);
  SamplerCaseEncoder& RawFloat(float value);
  SamplerCaseEncoder& IntEdge(uint8_t index);
  SamplerCaseEncoder& RawInt(int32_t value);
  SamplerCaseEncoder& Seed(uint64_t seed);
  SamplerCaseEncoder& Context(const std::vector<uint16_t>& ids);
  SamplerCaseEncoder& Logits(LogitPattern pattern, const std::vector<uint8_t>& bytes);
  // After exactly the logits' bytes: the presence and frequency penalties (float edge
  // indices), output_start, and logit_bias entries of (small id, index into the bias table).
  SamplerCaseEncoder& OpenAiSteps(uint8_t presence, uint8_t frequency, uint8_t output_start,
                                  const std::vector<std::pair<uint8_t, uint8_t>>& bias);
  std::vector<uint8_t> Build() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// How many entries the edge tables have (indices at or past them mean "raw bytes follow").
int FloatEdgeCount();
int IntEdgeCount();

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_GENERATION_FUZZ_SAMPLER_FUZZ_INPUT_H_
