// The AVX-512 path. Each x row has kAcc vector accumulators; the 16-element chunk starting at
// element 16c always goes to accumulator c % kAcc,
// and the accumulators are summed in a fixed order at the end, so a row's result does not
// depend on the tile it is computed in. Tiles of up to 8 rows share each weight load.
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
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma,f16c")
#endif

namespace tandem::internal {
namespace {

constexpr int kAcc = 2;  // DotQuant relies on this: one accumulator per half-block

// Sixteen weights starting at element `c` of a plain-typed row, as floats.
inline __m512 LoadPlain16(TensorType type, const uint8_t* row, int64_t c, __mmask16 mask) {
  switch (type) {
    case TensorType::kF16:
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * c));
    case TensorType::kBF16: {
      const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, row + 2 * c));
      return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));  // bf16 is a float's top half
    }
    default:
      return _mm512_maskz_loadu_ps(mask, row + 4 * c);
  }
}

// sums[t] = acc[t][0] + acc[t][1] for the row's dot products with kTile x rows, before the
// horizontal sum: chunk c (elements 16c..16c+15) goes to accumulator c % kAcc.
template <int kTile>
inline void PlainSums(TensorType type, const uint8_t* row, const float* x, int64_t x_stride,
                      int64_t cols, __m512* sums) {
  __m512 acc[kTile][kAcc];
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t)
#pragma GCC unroll 16
    for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm512_setzero_ps();
  int64_t chunk = 0;
  for (int64_t c = 0; c < cols; c += 16, ++chunk) {
    const int64_t left = cols - c;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512 w = LoadPlain16(type, row, c, mask);
    const int a = static_cast<int>(chunk % kAcc);
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + t * x_stride + c);
      acc[t][a] = _mm512_fmadd_ps(w, xv, acc[t][a]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) sums[t] = _mm512_add_ps(acc[t][0], acc[t][1]);
}

// The horizontal sum of v's 16 lanes as one fixed tree (GCC's _mm512_reduce_add_ps):
//   h[i] = v[i] + v[i + 8],  q[i] = h[i] + h[i + 4]  (i < 4),  (q[0] + q[2]) + (q[1] + q[3]).
inline float SumLanes(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 e = _mm_add_ps(q, _mm_shuffle_ps(q, q, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(e) + _mm_cvtss_f32(_mm_shuffle_ps(e, e, 1));
}

// The horizontal sums of 16 vectors at once, out[j] = SumLanes(v[j]) bit for bit: each stage
// adds the same pairs of lanes as SumLanes, two vectors' worth per instruction.
inline __m512 SumLanes16(const __m512* v) {
  __m512 h[8], q[4], e[2];
  for (int m = 0; m < 8; ++m) {  // h[m]: v[2m]'s h in lanes 0..7, v[2m + 1]'s in 8..15
    const __m512 lo = _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi = _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2));
    h[m] = _mm512_add_ps(lo, hi);
  }
  for (int m = 0; m < 4; ++m) {  // q[m]: 128-bit lane k holds v[4m + k]'s q
    const __m512 a = _mm512_shuffle_f32x4(h[2 * m], h[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 b = _mm512_shuffle_f32x4(h[2 * m], h[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1));
    q[m] = _mm512_add_ps(a, b);
  }
  for (int m = 0; m < 2;
       ++m) {  // e[m], lane k: q[2m][0] + q[2m][2], the same for [1], [3], q[2m + 1]
    const __m512 a = _mm512_shuffle_ps(q[2 * m], q[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 b = _mm512_shuffle_ps(q[2 * m], q[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2));
    e[m] = _mm512_add_ps(a, b);
  }
  // r[4k + i]: the sum of v[4i + k] (lane k of q[i] came from v[4i + k]).
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, r);
}

template <int kTile>
void DotPlain(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int64_t cols,
              float* out) {
  __m512 sums[kTile];
  PlainSums<kTile>(type, row, x, x_stride, cols, sums);
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) out[t] = SumLanes(sums[t]);
}

// DotPlain for `count` (<= 16) consecutive rows, out[t * out_stride + j] for row j: the same
// sums, their horizontal sums taken 16 rows at a time.
template <int kTile>
void DotPlainRows(TensorType type, const uint8_t* rows, int64_t row_bytes, int count,
                  const float* x, int64_t x_stride, int64_t cols, float* out, int64_t out_stride) {
  __m512 sums[kTile][16];
  for (int j = 0; j < count; ++j) {
    __m512 row_sums[kTile];
    PlainSums<kTile>(type, rows + j * row_bytes, x, x_stride, cols, row_sums);
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) sums[t][j] = row_sums[t];
  }
  for (int j = count; j < 16; ++j)
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) sums[t][j] = _mm512_setzero_ps();
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1);
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) {
    _mm512_mask_storeu_ps(out + t * out_stride, lanes, SumLanes16(sums[t]));
  }
}

// Q8_0 and Q4_0: 32-element blocks, two chunks each; weight = q · d, exact in float, computed
// once per block and shared by the tile's rows. Chunk c (elements 16c..16c+15) goes to
// accumulator c % kAcc.
template <int kTile>
void DotQuant(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int64_t cols,
              float* out) {
  __m512 acc[kTile][kAcc];
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t)
#pragma GCC unroll 16
    for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm512_setzero_ps();
  const bool q8 = type == TensorType::kQ8_0;
  const int64_t block_bytes = q8 ? 34 : 18;
  for (int64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* block = row + b * block_bytes;
    uint16_t d_bits;
    std::memcpy(&d_bits, block, sizeof(d_bits));
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(d_bits));
    __m512 w0, w1;  // elements 0..15 and 16..31
    if (q8) {
      w0 = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2))));
      w1 = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18))));
    } else {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
      const __m128i mask = _mm_set1_epi8(0x0F);
      const __m512i eight = _mm512_set1_epi32(8);
      w0 =
          _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(q, mask)), eight));
      w1 = _mm512_cvtepi32_ps(
          _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), mask)), eight));
    }
    w0 = _mm512_mul_ps(w0, d);
    w1 = _mm512_mul_ps(w1, d);
// kAcc == 2: the block's two chunks go to accumulators 0 and 1.
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      const float* xt = x + t * x_stride + 32 * b;
      acc[t][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xt), acc[t][0]);
      acc[t][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xt + 16), acc[t][1]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) out[t] = SumLanes(_mm512_add_ps(acc[t][0], acc[t][1]));
}

template <int kTile>
void DotTile(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int64_t cols,
             float* out) {
  if (type == TensorType::kQ8_0 || type == TensorType::kQ4_0) {
    DotQuant<kTile>(type, row, x, x_stride, cols, out);
  } else {
    DotPlain<kTile>(type, row, x, x_stride, cols, out);
  }
}

}  // namespace

void DotPlainRowsAvx512(TensorType type, const uint8_t* rows, int64_t row_bytes, int count,
                        const float* x, int64_t x_stride, int tile, int64_t cols, float* out,
                        int64_t out_stride) {
  static_assert(kMaxTile == 8, "one case per tile size");
  switch (tile) {
#define TANDEM_ROWS_CASE(k) \
  case k:                   \
    return DotPlainRows<k>(type, rows, row_bytes, count, x, x_stride, cols, out, out_stride);
    TANDEM_ROWS_CASE(1)
    TANDEM_ROWS_CASE(2)
    TANDEM_ROWS_CASE(3)
    TANDEM_ROWS_CASE(4)
    TANDEM_ROWS_CASE(5)
    TANDEM_ROWS_CASE(6)
    TANDEM_ROWS_CASE(7)
    default:
      return DotPlainRows<8>(type, rows, row_bytes, count, x, x_stride, cols, out, out_stride);
#undef TANDEM_ROWS_CASE
  }
}

void DotTileAvx512(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                   int64_t cols, float* out) {
  static_assert(kMaxTile == 8, "one case per tile size");
  switch (tile) {
    case 1:
      return DotTile<1>(type, row, x, x_stride, cols, out);
    case 2:
      return DotTile<2>(type, row, x, x_stride, cols, out);
    case 3:
      return DotTile<3>(type, row, x, x_stride, cols, out);
    case 4:
      return DotTile<4>(type, row, x, x_stride, cols, out);
    case 5:
      return DotTile<5>(type, row, x, x_stride, cols, out);
    case 6:
      return DotTile<6>(type, row, x, x_stride, cols, out);
    case 7:
      return DotTile<7>(type, row, x, x_stride, cols, out);
    default:
      return DotTile<8>(type, row, x, x_stride, cols, out);
  }
}

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected (DetectKernelIsa), kept linkable.
namespace tandem::internal {
void DotPlainRowsAvx512(TensorType type, const uint8_t* rows, int64_t row_bytes, int count,
                        const float* x, int64_t x_stride, int tile, int64_t cols, float* out,
                        int64_t out_stride) {
  float dots[kMaxTile];
  for (int j = 0; j < count; ++j) {
    DotTileScalar(type, rows + j * row_bytes, x, x_stride, tile, cols, dots);
    for (int t = 0; t < tile; ++t) out[t * out_stride + j] = dots[t];
  }
}
void DotTileAvx512(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                   int64_t cols, float* out) {
  DotTileScalar(type, row, x, x_stride, tile, cols, out);
}
}  // namespace tandem::internal
#endif
