// The AVX-512 kernels over packed panels (packed_matrix.h). A zmm holds one column of a
// panel's 16 rows; for each x row t of the tile,
//   acc[t][a] += column * broadcast(x[t, c])
// Each (x row, panel) pair has its own accumulators, and which accumulator a column goes to
// depends only on the column index, so y[t, r] is computed by the same operations in the same
// order whatever the tile size, the tile's other rows, or the thread that runs the panel.
// GCC 12's AVX-512 headers initialise vectors as `__Y = __Y`, which -Wuninitialized flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_matrix.h"

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

// Lanes of the panel that are real rows (the last panel may be padded).
struct PanelTile {
  const uint8_t* panel;  // the packed panel
  int64_t cols;
  const float* x;        // [tile, cols], rows `cols` apart
  float* y;              // y[t, 16p + lane] at y[t * y_stride + lane]
  int64_t y_stride;
  __mmask16 lanes;
};

// Q8_0 and Q4_0. Per 32-column block the columns are summed unscaled (q is an integer, so
// q * x rounds like any product) into two accumulators (even and odd columns), which are then
// added and scaled by the rows' d with one FMA into the running sum:
//   sum[t] += d · (Σ_even q·x + Σ_odd q·x)
// so a row pays two vector ops per block for its scale instead of one per column.
template <int kTile, bool kQ8>
void PanelQuant(const PanelTile& p) {
  constexpr int64_t kBlockBytes = kQ8 ? 32 + 32 * 16 : 32 + 16 * 16;
  __m512 sum[kTile];
  #pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) sum[t] = _mm512_setzero_ps();
  // Q4_0: lane value v holds a nibble in bits 0..3; vpermps reads only those bits of each
  // index, so permuting this table maps the nibble n to n - 8 exactly.
  const __m512 q4_table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t b = 0; b < p.cols / 32; ++b) {
    const uint8_t* block = p.panel + b * kBlockBytes;
    const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block)));
    const uint8_t* q = block + 32;
    const float* xb = p.x + 32 * b;
    __m512 even[kTile], odd[kTile];
    #pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) even[t] = odd[t] = _mm512_setzero_ps();
    if constexpr (kQ8) {
      // Columns c (even) and c + 1 (odd), 16 int8 each.
      #pragma GCC unroll 2
      for (int c = 0; c < 32; c += 2) {
        const __m512 w0 = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * c))));
        const __m512 w1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
            _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * c + 16))));
        #pragma GCC unroll 16
        for (int t = 0; t < kTile; ++t) {
          even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(xb[t * p.cols + c]), even[t]);
          odd[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(xb[t * p.cols + c + 1]), odd[t]);
        }
      }
    } else {
      // Byte k of each row holds column k (low nibble, "even") and column k + 16 (high).
      #pragma GCC unroll 2
      for (int c = 0; c < 16; ++c) {
        const __m512i v = _mm512_cvtepu8_epi32(
            _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * c)));
        const __m512 w0 = _mm512_permutexvar_ps(v, q4_table);
        const __m512 w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), q4_table);
        #pragma GCC unroll 16
        for (int t = 0; t < kTile; ++t) {
          even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(xb[t * p.cols + c]), even[t]);
          odd[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(xb[t * p.cols + c + 16]), odd[t]);
        }
      }
    }
    #pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) sum[t] = _mm512_fmadd_ps(_mm512_add_ps(even[t], odd[t]), d, sum[t]);
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) _mm512_mask_storeu_ps(p.y + t * p.y_stride, p.lanes, sum[t]);
}

// F16 / BF16: even columns to one accumulator, odd columns to the other (two chains keep the
// FMA latency hidden for a single x row); y = even + odd.
template <int kTile, bool kBf16>
void PanelHalf(const PanelTile& p) {
  __m512 even[kTile], odd[kTile];
  #pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) even[t] = odd[t] = _mm512_setzero_ps();
  auto column = [&](int64_t c) {
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.panel + 32 * c));
    if constexpr (kBf16) {
      // bf16 is a float's top half: widen and shift into place, exact.
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm512_cvtph_ps(h);
    }
  };
  int64_t c = 0;
  for (; c + 2 <= p.cols; c += 2) {
    const __m512 w0 = column(c);
    const __m512 w1 = column(c + 1);
    #pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(p.x[t * p.cols + c]), even[t]);
      odd[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(p.x[t * p.cols + c + 1]), odd[t]);
    }
  }
  if (c < p.cols) {  // an odd last column is even-indexed
    const __m512 w0 = column(c);
    #pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(p.x[t * p.cols + c]), even[t]);
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) {
    _mm512_mask_storeu_ps(p.y + t * p.y_stride, p.lanes, _mm512_add_ps(even[t], odd[t]));
  }
}

template <int kTile>
void PanelKernel(TensorType type, const PanelTile& p) {
  switch (type) {
    case TensorType::kQ8_0:
      return PanelQuant<kTile, true>(p);
    case TensorType::kQ4_0:
      return PanelQuant<kTile, false>(p);
    case TensorType::kBF16:
      return PanelHalf<kTile, true>(p);
    default:
      return PanelHalf<kTile, false>(p);
  }
}

}  // namespace

void PanelTileAvx512(const WeightMatrix& w, int64_t panel, const float* x, int tile, float* y) {
  const int64_t first_row = panel * kPanelRows;
  const int64_t valid = std::min<int64_t>(kPanelRows, w.rows - first_row);
  const PanelTile p{w.packed + panel * PanelBytes(w.type, w.cols), w.cols, x, y + first_row,
                    w.rows, static_cast<__mmask16>((1u << valid) - 1)};
  static_assert(kMaxPanelTile == 8, "one case per tile size");
  switch (tile) {
    case 1:
      return PanelKernel<1>(w.type, p);
    case 2:
      return PanelKernel<2>(w.type, p);
    case 3:
      return PanelKernel<3>(w.type, p);
    case 4:
      return PanelKernel<4>(w.type, p);
    case 5:
      return PanelKernel<5>(w.type, p);
    case 6:
      return PanelKernel<6>(w.type, p);
    case 7:
      return PanelKernel<7>(w.type, p);
    default:
      return PanelKernel<8>(w.type, p);
  }
}

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected (packing happens only for AVX-512), kept linkable.
namespace tandem::internal {
void PanelTileAvx512(const WeightMatrix&, int64_t, const float*, int, float*) {}
}  // namespace tandem::internal
#endif
