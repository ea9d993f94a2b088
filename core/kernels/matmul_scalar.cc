// The portable path: one float accumulator per x row, elements in order.
#include <cstring>

#include "core/kernels/matmul_internal.h"

namespace tandem::internal {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Decodes elements [0, 32) of one Q8_0 / Q4_0 block into w; values are exact (q * d).
void DecodeQ8_0(const uint8_t* block, float* w) {
  const float d = Fp16ToF32(LoadU16(block));
  const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
  for (int k = 0; k < 32; ++k) w[k] = static_cast<float>(q[k]) * d;
}

void DecodeQ4_0(const uint8_t* block, float* w) {
  const float d = Fp16ToF32(LoadU16(block));
  const uint8_t* q = block + 2;
  for (int k = 0; k < 16; ++k) {
    w[k] = static_cast<float>((q[k] & 0x0F) - 8) * d;     // low nibbles: elements 0..15
    w[k + 16] = static_cast<float>((q[k] >> 4) - 8) * d;  // high nibbles: elements 16..31
  }
}

float Weight(TensorType type, const uint8_t* row, int64_t c) {
  switch (type) {
    case TensorType::kF16:
      return Fp16ToF32(LoadU16(row + 2 * c));
    case TensorType::kBF16:
      return Bf16ToF32(LoadU16(row + 2 * c));
    default: {
      float v;
      std::memcpy(&v, row + 4 * c, sizeof(v));
      return v;
    }
  }
}

}  // namespace

void DotTileScalar(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                   int64_t cols, float* out) {
  float acc[kMaxTile] = {};
  if (type == TensorType::kQ8_0 || type == TensorType::kQ4_0) {
    const int64_t block_bytes = type == TensorType::kQ8_0 ? 34 : 18;
    float w[32];
    for (int64_t b = 0; b < cols / 32; ++b) {
      if (type == TensorType::kQ8_0) {
        DecodeQ8_0(row + b * block_bytes, w);
      } else {
        DecodeQ4_0(row + b * block_bytes, w);
      }
      for (int t = 0; t < tile; ++t) {
        const float* xt = x + t * x_stride + b * 32;
        for (int k = 0; k < 32; ++k) acc[t] += w[k] * xt[k];
      }
    }
  } else {
    for (int64_t c = 0; c < cols; ++c) {
      const float w = Weight(type, row, c);
      for (int t = 0; t < tile; ++t) acc[t] += w * x[t * x_stride + c];
    }
  }
  for (int t = 0; t < tile; ++t) out[t] = acc[t];
}

}  // namespace tandem::internal
