// The AVX2 + FMA + F16C path. Each x row has kAcc vector accumulators; the 8-element chunk
// starting at element 8c always goes to accumulator c % kAcc; a fixed final reduction.
// GCC 12's AVX-512 headers initialise vectors as `__Y = __Y`, which -Wuninitialized flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "core/kernels/matmul_internal.h"

#if defined(__x86_64__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace tandem::internal {
namespace {

constexpr int kAcc = 2;

inline float HorizontalSum(__m256 v) {
  const __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  return _mm_cvtss_f32(_mm_add_ss(sum2, _mm_movehdup_ps(sum2)));
}

// Eight weights at element c of a plain row; `count` < 8 only at the row's tail.
inline __m256 LoadPlain8(TensorType type, const uint8_t* row, int64_t c, int count) {
  alignas(32) float tmp[8] = {};
  if (count == 8) {
    switch (type) {
      case TensorType::kF16:
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)));
      case TensorType::kBF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c))),
            16));
      default:
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row + 4 * c));
    }
  }
  for (int k = 0; k < count; ++k) {
    uint16_t h;
    switch (type) {
      case TensorType::kF16:
        std::memcpy(&h, row + 2 * (c + k), 2);
        tmp[k] = _cvtsh_ss(h);
        break;
      case TensorType::kBF16: {
        std::memcpy(&h, row + 2 * (c + k), 2);
        const uint32_t bits = uint32_t{h} << 16;
        std::memcpy(&tmp[k], &bits, 4);
        break;
      }
      default:
        std::memcpy(&tmp[k], row + 4 * (c + k), 4);
    }
  }
  return _mm256_load_ps(tmp);
}

inline __m256 LoadX8(const float* x, int count) {
  if (count == 8) return _mm256_loadu_ps(x);
  alignas(32) float tmp[8] = {};
  std::memcpy(tmp, x, sizeof(float) * count);
  return _mm256_load_ps(tmp);
}

template <int kTile>
void DotTile(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int64_t cols,
             float* out) {
  __m256 acc[kTile][kAcc];
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t)
#pragma GCC unroll 16
    for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm256_setzero_ps();
  const bool quant = type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
  const int64_t block_bytes = type == TensorType::kQ8_0 ? 34 : 18;
  int64_t chunk = 0;
  for (int64_t c = 0; c < cols; c += 8, ++chunk) {
    const int count = static_cast<int>(cols - c < 8 ? cols - c : 8);
    __m256 w;
    if (quant) {
      const uint8_t* block = row + (c / 32) * block_bytes;
      const int within = static_cast<int>(c % 32);  // 0, 8, 16 or 24
      uint16_t d_bits;
      std::memcpy(&d_bits, block, sizeof(d_bits));
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(d_bits));
      __m256i q;
      if (type == TensorType::kQ8_0) {
        q = _mm256_cvtepi8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + within)));
      } else {
        const __m128i bytes =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + within % 16));
        const __m128i nibbles = within < 16
                                    ? _mm_and_si128(bytes, _mm_set1_epi8(0x0F))
                                    : _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
        q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(nibbles), _mm256_set1_epi32(8));
      }
      w = _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
    } else {
      w = LoadPlain8(type, row, c, count);
    }
    const int a = static_cast<int>(chunk % kAcc);
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      acc[t][a] = _mm256_fmadd_ps(w, LoadX8(x + t * x_stride + c, count), acc[t][a]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) out[t] = HorizontalSum(_mm256_add_ps(acc[t][0], acc[t][1]));
}

}  // namespace

void DotTileAvx2(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                 int64_t cols, float* out) {
  // Sixteen ymm registers hold four rows' accumulators: larger tiles run as groups of up to
  // four (each row's arithmetic is the same in any group).
  if (tile > 4) {
    DotTileAvx2(type, row, x, x_stride, 4, cols, out);
    DotTileAvx2(type, row, x + 4 * x_stride, x_stride, tile - 4, cols, out + 4);
    return;
  }
  switch (tile) {
    case 1:
      return DotTile<1>(type, row, x, x_stride, cols, out);
    case 2:
      return DotTile<2>(type, row, x, x_stride, cols, out);
    case 3:
      return DotTile<3>(type, row, x, x_stride, cols, out);
    default:
      return DotTile<4>(type, row, x, x_stride, cols, out);
  }
}

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected, kept linkable.
namespace tandem::internal {
void DotTileAvx2(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                 int64_t cols, float* out) {
  DotTileScalar(type, row, x, x_stride, tile, cols, out);
}
}  // namespace tandem::internal
#endif
