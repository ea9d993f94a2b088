#include "core/kernels/vnni_emulation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/kernels/packed_matrix.h"
#include "core/model/tensor_type.h"

namespace tandem::vnni_emulation {
namespace {

// The kernel's float step per (x row, block): sum += float(dot) · (d · s), one rounding for
// d · s and one fused multiply-add (vmulps, then vfmadd231ps).
float Step(float sum, int32_t dot, float d, float s) {
  return std::fma(static_cast<float>(dot), d * s, sum);
}

// dot[r] over one 32-column block of a panel for one x row (xq at the block's first column).
void BlockDots(TensorType type, const uint8_t* block, const int16_t* xq, int32_t xsum,
               int32_t* dot) {
  const uint8_t* quants = block + 32;  // after the 16 f16 scales
  for (int r = 0; r < 16; ++r) {
    int32_t acc = 0;
    if (type == TensorType::kQ8_0) {
      for (int j = 0; j < 16; ++j) {  // column pair (2j, 2j + 1): row r's two int8 quants
        const int16_t w0 = static_cast<int8_t>(quants[32 * j + 2 * r]);
        const int16_t w1 = static_cast<int8_t>(quants[32 * j + 2 * r + 1]);
        acc = Vpdpwssd(acc, w0, w1, xq[2 * j], xq[2 * j + 1]);
      }
    } else {
      // Bytes 2j, 2j + 1: low nibbles are columns 2j, 2j + 1, high nibbles 2j + 16, 2j + 17.
      for (int j = 0; j < 8; ++j) {
        const uint8_t b0 = quants[32 * j + 2 * r];
        const uint8_t b1 = quants[32 * j + 2 * r + 1];
        acc = Vpdpwssd(acc, b0 & 0x0F, b1 & 0x0F, xq[2 * j], xq[2 * j + 1]);
        acc = Vpdpwssd(acc, b0 >> 4, b1 >> 4, xq[2 * j + 16], xq[2 * j + 17]);
      }
      acc -= 8 * xsum;  // the nibbles are u - 8: Σ (u - 8)·xq = Σ u·xq - 8 Σ xq
    }
    dot[r] = acc;
  }
}

}  // namespace

int32_t Vpdpwssd(int32_t acc, int16_t a0, int16_t a1, int16_t b0, int16_t b1) {
  // Each product fits int32; the sums wrap modulo 2^32 as the instruction does.
  const uint32_t sum = static_cast<uint32_t>(acc) + static_cast<uint32_t>(int32_t{a0} * b0) +
                       static_cast<uint32_t>(int32_t{a1} * b1);
  int32_t out;
  std::memcpy(&out, &sum, sizeof(out));
  return out;
}

void QuantizeRowsInt16(const float* x, int64_t n, int64_t cols, int16_t* q, float* scales,
                       int32_t* sums, ActivationPrecision precision) {
  const int64_t blocks = cols / 32;
  const float limit = static_cast<float>(ActivationLimit(precision));
  for (int64_t i = 0; i < n * blocks; ++i) {
    const float* src = x + i * 32;
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(src[k]));
    const float inv = amax > 0 ? limit / amax : 0.0f;
    scales[i] = amax / limit;
    int32_t sum = 0;
    for (int k = 0; k < 32; ++k) {
      // nearbyint rounds to nearest even in the default mode, as vcvtps2dq does.
      const float v = std::nearbyint(src[k] * inv);
      const int32_t value = static_cast<int32_t>(std::clamp(v, -32768.0f, 32767.0f));
      q[i * 32 + k] = static_cast<int16_t>(value);
      sum += value;  // the kernel sums the int32 values before saturation: same in range
    }
    sums[i] = sum;
  }
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  const int64_t blocks = w.cols / 32;
  std::vector<int16_t> q(n * w.cols);
  std::vector<float> scales(n * blocks);
  std::vector<int32_t> sums(n * blocks);
  QuantizeRowsInt16(x, n, w.cols, q.data(), scales.data(), sums.data(), w.activations);
  const int64_t panel_bytes = PanelBytes(w.type, w.cols);
  const int64_t block_bytes = panel_bytes / blocks;
  int32_t dot[16];
  for (int64_t panel = 0; panel < PanelCount(w.rows); ++panel) {
    const int64_t lanes = std::min<int64_t>(kPanelRows, w.rows - panel * kPanelRows);
    for (int64_t t = 0; t < n; ++t) {
      float acc[16] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = w.packed + panel * panel_bytes + b * block_bytes;
        BlockDots(w.type, block, q.data() + t * w.cols + 32 * b, sums[t * blocks + b], dot);
        for (int r = 0; r < 16; ++r) {
          uint16_t d;
          std::memcpy(&d, block + 2 * r, sizeof(d));
          acc[r] = Step(acc[r], dot[r], Fp16ToF32(d), scales[t * blocks + b]);
        }
      }
      for (int64_t r = 0; r < lanes; ++r) y[t * w.rows + panel * kPanelRows + r] = acc[r];
    }
  }
}

}  // namespace tandem::vnni_emulation
