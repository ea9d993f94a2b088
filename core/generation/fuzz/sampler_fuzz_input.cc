#include "core/generation/fuzz/sampler_fuzz_input.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tandem::fuzzing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kFloatEdges[] = {0.0f,
                                 1.0f,
                                 0.8f,
                                 0.5f,
                                 1e-38f,
                                 1e-30f,
                                 1e-6f,
                                 2.0f,
                                 1e30f,
                                 1e38f,
                                 -1.0f,
                                 -0.0f,
                                 kInf,
                                 -kInf,
                                 std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::max(),
                                 std::numeric_limits<float>::denorm_min(),
                                 0.05f,
                                 0.95f,
                                 0.9999999f,
                                 1.0000001f,
                                 1e-45f,
                                 0.1f,
                                 1e38f * 3};
constexpr int kFloatEdgeCount = sizeof(kFloatEdges) / sizeof(kFloatEdges[0]);
// Integer edges; values relative to the vocabulary are marked by offsets from kVocabBase.
constexpr int64_t kVocabBase = int64_t{1} << 40;
constexpr int64_t kIntEdges[] = {0,
                                 1,
                                 2,
                                 3,
                                 kVocabBase - 1,
                                 kVocabBase,
                                 kVocabBase + 1,
                                 -1,
                                 64,
                                 std::numeric_limits<int32_t>::max(),
                                 std::numeric_limits<int32_t>::min()};
constexpr int kIntEdgeCount = sizeof(kIntEdges) / sizeof(kIntEdges[0]);

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  template <typename T>
  T Raw() {
    uint8_t bytes[sizeof(T)];
    for (uint8_t& b : bytes) b = Byte();
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
  float Float() {
    const uint8_t index = Byte();
    return index < kFloatEdgeCount ? kFloatEdges[index] : Raw<float>();
  }
  int32_t Int(int64_t vocab) {
    const uint8_t index = Byte();
    if (index >= kIntEdgeCount) return Raw<int32_t>();
    const int64_t v = kIntEdges[index];
    return static_cast<int32_t>(
        v >= kVocabBase - 1 && v <= kVocabBase + 1 ? vocab + (v - kVocabBase) : v);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

float LogitFrom(LogitPattern pattern, Reader& in) {
  switch (pattern) {
    case LogitPattern::kRaw: {
      const float f = in.Raw<float>();
      return std::isfinite(f) ? f : 0.0f;
    }
    case LogitPattern::kSmallInts:
      return static_cast<float>(static_cast<int>(in.Byte() % 16) - 8);
    default: {
      constexpr float kExtremes[] = {1e30f, -1e30f, 3e38f, -3e38f, 0.0f, 1.0f, -1.0f, 1e-30f};
      return kExtremes[in.Byte() % 8];
    }
  }
}

// logit_bias, presence and frequency penalties, output_start (issue #30): edge values or raw
// bytes; ids from the integer edges (the vocabulary's bounds, -1, int32's) or small raw ones,
// in the order read (so out-of-order and repeated ids reach Create's refusal too).
void ReadOpenAiSteps(Reader& in, SamplerCase* c) {
  c->config.presence_penalty = in.Float();
  c->config.frequency_penalty = in.Float();
  c->config.output_start = in.Byte() % 70;
  constexpr float kBiases[] = {-100.0f, 100.0f, 0.0f, 1.0f, -1.0f, 99.999f, -100.001f, 50.0f};
  const int entries = in.Byte() % 9;
  for (int i = 0; i < entries; ++i) {
    const uint8_t kind = in.Byte();
    const int32_t id = kind % 2 ? in.Int(c->vocab_size) : in.Byte() % (c->vocab_size + 2);
    const float bias = kind & 2 ? in.Float() : kBiases[in.Byte() % 8];
    c->config.logit_bias.push_back({id, bias});
  }
}

}  // namespace

int FloatEdgeCount() { return kFloatEdgeCount; }
int IntEdgeCount() { return kIntEdgeCount; }

SamplerCase DecodeSamplerCase(const uint8_t* data, size_t size) {
  Reader in(data, size);
  SamplerCase c;
  c.vocab_size = 1 + in.Raw<uint16_t>() % 512;
  c.config.temperature = in.Float();
  c.config.top_k = in.Int(c.vocab_size);
  c.config.top_p = in.Float();
  c.config.min_p = in.Float();
  c.config.repetition_penalty = in.Float();
  c.config.penalty_window = in.Int(c.vocab_size);
  c.config.seed = in.Raw<uint64_t>();
  c.position = in.Raw<uint32_t>();
  c.uniform = (in.Raw<uint32_t>() >> 1) / 2147483648.0;
  const int context_size = in.Byte() % 65;
  for (int i = 0; i < context_size; ++i) c.context.push_back(in.Raw<uint16_t>() % c.vocab_size);
  const auto pattern = static_cast<LogitPattern>(in.Byte() % 4);
  if (pattern == LogitPattern::kAllEqual) {
    c.logits.assign(c.vocab_size, LogitFrom(LogitPattern::kRaw, in));
  } else {
    for (int64_t i = 0; i < c.vocab_size; ++i) c.logits.push_back(LogitFrom(pattern, in));
  }
  ReadOpenAiSteps(in, &c);  // last, so that older seeds decode as before
  return c;
}

SamplerCaseEncoder& SamplerCaseEncoder::Vocab(uint16_t size) {
  const uint16_t raw = static_cast<uint16_t>(size - 1);
  bytes_.push_back(static_cast<uint8_t>(raw));
  bytes_.push_back(static_cast<uint8_t>(raw >> 8));
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::FloatEdge(uint8_t index) {
  bytes_.push_back(index);
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::RawFloat(float value) {
  bytes_.push_back(0xFF);
  uint8_t b[4];
  std::memcpy(b, &value, 4);
  bytes_.insert(bytes_.end(), b, b + 4);
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::IntEdge(uint8_t index) {
  bytes_.push_back(index);
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::RawInt(int32_t value) {
  bytes_.push_back(0xFF);
  uint8_t b[4];
  std::memcpy(b, &value, 4);
  bytes_.insert(bytes_.end(), b, b + 4);
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::Seed(uint64_t seed) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(seed >> (8 * i)));
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>((seed * 31 + i) >> 3));
  return *this;  // (position and uniform follow the seed)
}
SamplerCaseEncoder& SamplerCaseEncoder::Context(const std::vector<uint16_t>& ids) {
  bytes_.push_back(static_cast<uint8_t>(ids.size()));
  for (uint16_t id : ids) {
    bytes_.push_back(static_cast<uint8_t>(id));
    bytes_.push_back(static_cast<uint8_t>(id >> 8));
  }
  return *this;
}
SamplerCaseEncoder& SamplerCaseEncoder::Logits(LogitPattern pattern,
                                               const std::vector<uint8_t>& bytes) {
  bytes_.push_back(static_cast<uint8_t>(pattern));
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

SamplerCaseEncoder& SamplerCaseEncoder::OpenAiSteps(
    uint8_t presence, uint8_t frequency, uint8_t output_start,
    const std::vector<std::pair<uint8_t, uint8_t>>& bias) {
  bytes_.insert(bytes_.end(), {presence, frequency, output_start});
  bytes_.push_back(static_cast<uint8_t>(bias.size()));
  for (const auto& [id, index] : bias) bytes_.insert(bytes_.end(), {uint8_t{0}, id, index});
  return *this;
}

}  // namespace tandem::fuzzing
