// The AVX-512 kernels over packed panels (packed_matrix.h). A zmm holds one column of a
// panel's 16 rows; for each x row t,
//   even/odd[t] += column c * broadcast(x[t, c])      (c even / odd within a 32-column block)
//   sum[t]      += d · (even[t] + odd[t])             once per block (d = 1 for F16 / BF16)
// Each (x row, panel) pair has its own accumulators and which one a column goes to depends
// only on the column index, so y[t, r] is computed by the same operations in the same order
// whatever n, the tiling of the rows, or the thread that runs the panel.
//
// Loop order: block by block, every tile of x rows consumes the block while it is in L1, and
// the running sums live in a small stack array. The panel is thus read from memory in one
// continuous stream however many tiles there are, and software prefetch keeps that stream
// ahead of the arithmetic (the hardware prefetcher alone left decode ~1.5x short of the
// machine's read bandwidth).
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

// How far ahead of the block being computed to prefetch (bytes of the packed stream, which
// runs on into the next panel): ~2 KiB covers the memory latency at one core's bandwidth.
constexpr int64_t kPrefetchBytes = 2048;

// Bytes of one 32-column block of a panel.
template <TensorType kType>
constexpr int64_t BlockBytes() {
  if constexpr (kType == TensorType::kQ8_0) return 32 + 32 * 16;
  if constexpr (kType == TensorType::kQ4_0) return 32 + 16 * 16;
  return 32 * 32;  // F16 / BF16: 32 columns of 16 two-byte values
}

// Column c of a 16-bit panel block as 16 floats (exact conversions).
template <TensorType kType>
inline __m512 HalfColumn(const uint8_t* block, int c) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32 * c));
  if constexpr (kType == TensorType::kBF16) {
    // bf16 is a float's top half: widen and shift into place.
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    return _mm512_cvtph_ps(h);
  }
}

// sums[t] += scale · Σ_c W[:, c] · x[t, c] over the `width` columns of one block, for kTile x
// rows (row t at x + t * x_stride, already offset to the block's first column). `width` is 32
// except in a 16-bit matrix's last block. q·x products are summed unscaled (q is an integer,
// exact in float) and scaled once per block.
template <int kTile, TensorType kType>
inline void AccumulateBlock(const uint8_t* block, int width, const float* x, int64_t x_stride,
                            __m512 scale, float* sums) {
  __m512 even[kTile], odd[kTile];
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) even[t] = odd[t] = _mm512_setzero_ps();
  auto fma2 = [&](__m512 w0, int c0, __m512 w1, int c1) {
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[t * x_stride + c0]), even[t]);
      odd[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(x[t * x_stride + c1]), odd[t]);
    }
  };
  if constexpr (kType == TensorType::kQ8_0) {
    // Column pair c, c + 1: 16 rows' int8 pairs at q + 16c. Widened to int16, each 32-bit
    // lane holds one row's pair; shifts split it into the two columns' integers.
    const uint8_t* q = block + 32;
#pragma GCC unroll 2
    for (int c = 0; c < 32; c += 2) {
      const __m512i pairs =
          _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 16 * c)));
      const __m512 w0 = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16));
      const __m512 w1 = _mm512_cvtepi32_ps(_mm512_srai_epi32(pairs, 16));
      fma2(w0, c, w1, c + 1);
    }
  } else if constexpr (kType == TensorType::kQ4_0) {
    // Byte k of each row holds column k (low nibble, "even") and column k + 16 (high).
    // vpermps reads only bits 0..3 of each index, so permuting this table maps a nibble n to
    // n - 8 exactly, without masking off the other bits.
    const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    // Bytes c, c + 1 of 16 rows at q + 16c (c even): widened to 16 bits, each 32-bit lane
    // holds one row's pair; shifts bring each nibble to the lane's low bits.
    const uint8_t* q = block + 32;
#pragma GCC unroll 2
    for (int c = 0; c < 16; c += 2) {
      const __m512i v =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 16 * c)));
      fma2(_mm512_permutexvar_ps(v, table), c,
           _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table), c + 16);
      fma2(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 16), table), c + 1,
           _mm512_permutexvar_ps(_mm512_srli_epi32(v, 20), table), c + 17);
    }
  } else {
    int c = 0;
#pragma GCC unroll 2
    for (; c + 2 <= width; c += 2) {
      fma2(HalfColumn<kType>(block, c), c, HalfColumn<kType>(block, c + 1), c + 1);
    }
    if (c < width) {  // an odd last column is even-indexed
      const __m512 w0 = HalfColumn<kType>(block, c);
#pragma GCC unroll 16
      for (int t = 0; t < kTile; ++t) {
        even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[t * x_stride + c]), even[t]);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t) {
    float* s = sums + 16 * t;
    _mm512_store_ps(s, _mm512_fmadd_ps(_mm512_add_ps(even[t], odd[t]), scale, _mm512_load_ps(s)));
  }
}

// One panel for n x rows (n <= kMaxPanelGroup) split into tiles of kTile or kTile - 1 rows.
template <int kTile, TensorType kType>
void PanelGroup(const uint8_t* panel, int64_t cols, const float* x, int n, float* y,
                int64_t y_stride, __mmask16 lanes) {
  alignas(64) float sums[kMaxPanelGroup * 16];
  std::fill(sums, sums + 16 * n, 0.0f);
  const int tiles = (n + kTile - 1) / kTile;
  const int big_tiles = n - tiles * (kTile - 1);  // tiles of kTile rows; the rest kTile - 1
  constexpr bool kQuant = kType == TensorType::kQ8_0 || kType == TensorType::kQ4_0;
  const int64_t blocks = (cols + 31) / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = panel + b * BlockBytes<kType>();
    for (int64_t line = 0; line < BlockBytes<kType>(); line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + line), _MM_HINT_T0);
    }
    const int width = static_cast<int>(std::min<int64_t>(32, cols - 32 * b));
    __m512 scale = _mm512_set1_ps(1.0f);  // 16-bit types: x · 1 is exact
    if constexpr (kQuant) {
      scale = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
    }
    int row = 0;
    for (int k = 0; k < tiles; ++k) {
      const float* xt = x + row * cols + 32 * b;
      if (k < big_tiles) {
        AccumulateBlock<kTile, kType>(block, width, xt, cols, scale, sums + 16 * row);
        row += kTile;
      } else if constexpr (kTile > 1) {
        AccumulateBlock<kTile - 1, kType>(block, width, xt, cols, scale, sums + 16 * row);
        row += kTile - 1;
      }
    }
  }
  for (int t = 0; t < n; ++t) {
    _mm512_mask_storeu_ps(y + t * y_stride, lanes, _mm512_load_ps(sums + 16 * t));
  }
}

template <TensorType kType>
void PanelForType(int tile, const uint8_t* panel, int64_t cols, const float* x, int n, float* y,
                  int64_t y_stride, __mmask16 lanes) {
  static_assert(kMaxPanelTile == 12, "one case per tile size");
  switch (tile) {
#define TANDEM_PANEL_CASE(k) \
  case k:                    \
    return PanelGroup<k, kType>(panel, cols, x, n, y, y_stride, lanes);
    TANDEM_PANEL_CASE(1)
    TANDEM_PANEL_CASE(2)
    TANDEM_PANEL_CASE(3)
    TANDEM_PANEL_CASE(4)
    TANDEM_PANEL_CASE(5)
    TANDEM_PANEL_CASE(6)
    TANDEM_PANEL_CASE(7)
    TANDEM_PANEL_CASE(8)
    TANDEM_PANEL_CASE(9)
    TANDEM_PANEL_CASE(10)
    TANDEM_PANEL_CASE(11)
    default:
      return PanelGroup<12, kType>(panel, cols, x, n, y, y_stride, lanes);
#undef TANDEM_PANEL_CASE
  }
}

}  // namespace

void PanelGroupAvx512(const WeightMatrix& w, int64_t panel, const float* x, int n, float* y) {
  const int64_t first_row = panel * kPanelRows;
  const int64_t valid = std::min<int64_t>(kPanelRows, w.rows - first_row);
  const uint8_t* data = w.packed + panel * PanelBytes(w.type, w.cols);
  const __mmask16 lanes = static_cast<__mmask16>((1u << valid) - 1);
  // Tiles as even as possible (9 rows run as one tile, 13 as 7 + 6): fewer tiles share each
  // column's conversion among more rows; a row's result does not depend on its tile.
  const int tiles = (n + kMaxPanelTile - 1) / kMaxPanelTile;
  const int tile = (n + tiles - 1) / tiles;
  float* out = y + first_row;
  switch (w.type) {
    case TensorType::kQ8_0:
      return PanelForType<TensorType::kQ8_0>(tile, data, w.cols, x, n, out, w.rows, lanes);
    case TensorType::kQ4_0:
      return PanelForType<TensorType::kQ4_0>(tile, data, w.cols, x, n, out, w.rows, lanes);
    case TensorType::kBF16:
      return PanelForType<TensorType::kBF16>(tile, data, w.cols, x, n, out, w.rows, lanes);
    default:
      return PanelForType<TensorType::kF16>(tile, data, w.cols, x, n, out, w.rows, lanes);
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
void PanelGroupAvx512(const WeightMatrix&, int64_t, const float*, int, float*) {}
}  // namespace tandem::internal
#endif
