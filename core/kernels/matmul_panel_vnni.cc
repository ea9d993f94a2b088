// The AVX-512 VNNI kernel for Q8_0 and Q4_0 panels (packed_matrix.h): integer dot products
// of the weights' quants with activations quantized to int16 per 32-column block,
//   acc[t, r]  = Σ_{c in block} q[r, c] · xq[t, c]          exact, in int32 (vpdpwssd)
//   y[t, r]   += float(acc[t, r]) · (d[r] · s[t])          once per block
// where d[r] is the weights' block scale and s[t] the activations' (x ≈ s · xq). Q4_0's
// quants are nibbles u - 8: the kernel multiplies the nibbles u as they are and subtracts
// 8 · Σ_c xq[t, c] (kept with the activations). The int16 activations carry 16 bits per
// block: x's rounding error is at most max|x| / 65534 per element, far below the weights'
// own quantization.
//
// Why: a column pair of 16 rows costs one widening load and one vpdpwssd per x row, where
// the float kernel spends two conversions and two FMAs. At the batch sizes of speculative
// verification both are compute-heavy, and vpdpwssd issues on a single port on the CPUs
// measured (the same multiply-add rate as two-port FMAs), so the gain is the conversions
// saved: SmolLM2-360M-shape Q8_0, a 5-token pass went from 1.76 to ~1.3 decode steps.
//
// Batch invariance: a block's integer sum is exact whatever the order, and the float steps
// per (x row, block) are fixed, so y[t, r] is the same whatever n, the tiling, the pairing of
// panels, or the thread.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_matrix.h"

#if defined(__x86_64__)
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")
#endif

namespace tandem::internal {
namespace {

// Bytes of one 32-column block of a panel: 16 f16 scales, then the quants.
template <TensorType kType>
constexpr int64_t BlockBytes() {
  return kType == TensorType::kQ8_0 ? 32 + 32 * 16 : 32 + 16 * 16;
}
// Bytes ahead of the block being computed to prefetch, per panel stream.
constexpr int64_t kPrefetchBytes = 2048;

// The pair (xq[c], xq[c + 1]) as one 32-bit value, broadcast to every row's lane.
inline __m512i PairOf(const int16_t* xq) {
  int32_t pair;
  std::memcpy(&pair, xq, sizeof(pair));
  return _mm512_set1_epi32(pair);
}

// acc[p][t] += Σ over column pair(s) j of panel p's rows · x row t: for Q8_0 the pair
// (2j, 2j + 1), for Q4_0 the pairs (2j, 2j + 1) and (2j + 16, 2j + 17) of byte pair j.
template <TensorType kType, int kTile, int kPanels>
inline void AccumulatePair(int j, const uint8_t* const* block, const int16_t* xq, int64_t x_stride,
                           __m512i (&acc)[kPanels][kTile]) {
  if constexpr (kType == TensorType::kQ8_0) {
    __m512i w[kPanels];  // [16 rows] × (q[r][2j], q[r][2j + 1]) as int16
#pragma GCC unroll 2
    for (int p = 0; p < kPanels; ++p) {
      w[p] = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block[p] + 32 + 32 * j)));
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      const __m512i x_pair = PairOf(xq + t * x_stride + 2 * j);
#pragma GCC unroll 2
      for (int p = 0; p < kPanels; ++p) acc[p][t] = _mm512_dpwssd_epi32(acc[p][t], w[p], x_pair);
    }
  } else {
    const __m512i low_nibble = _mm512_set1_epi16(0x0F);
    __m512i lo[kPanels], hi[kPanels];  // [16 rows] × nibble pairs as int16 (0..15)
#pragma GCC unroll 2
    for (int p = 0; p < kPanels; ++p) {
      const __m512i bytes = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block[p] + 32 + 32 * j)));
      lo[p] = _mm512_and_si512(bytes, low_nibble);
      hi[p] = _mm512_srli_epi16(bytes, 4);
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      const __m512i x_lo = PairOf(xq + t * x_stride + 2 * j);
      const __m512i x_hi = PairOf(xq + t * x_stride + 2 * j + 16);
#pragma GCC unroll 2
      for (int p = 0; p < kPanels; ++p) {
        acc[p][t] = _mm512_dpwssd_epi32(acc[p][t], lo[p], x_lo);
        acc[p][t] = _mm512_dpwssd_epi32(acc[p][t], hi[p], x_hi);
      }
    }
  }
}

#include "core/kernels/int8_dot.inc"

// The int8 panels' form of AccumulatePair (PackMatrix's int8 layout, packed_matrix.h): acc[p][t]
// += Σ over column quad(s) j of panel p's rows · x row t's int8 values x8, for Q8_0 the quad
// 4j..4j + 3 (the weights stored as q + 128, unsigned), for Q4_0 the quads 4j.. and 4j + 16..
// of byte quad j (nibbles u). The caller subtracts 128 · Σ x8 (Q8_0) or 8 · Σ x8 (Q4_0).
template <TensorType kType, int kTile, int kPanels>
inline void AccumulateQuad(int j, const uint8_t* const* block, const int8_t* const* rows,
                           __m512i (&acc)[kPanels][kTile]) {
  if constexpr (kType == TensorType::kQ8_0) {
    __m512i w[kPanels];  // [16 rows] × (q[r][4j + i] + 128), u8
#pragma GCC unroll 2
    for (int p = 0; p < kPanels; ++p) w[p] = _mm512_loadu_si512(block[p] + 32 + 64 * j);
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      DpbusdPanels<kPanels>(w, rows[t] + 4 * j, &acc[0][t], kTile);
    }
  } else {
    const __m512i low_nibble = _mm512_set1_epi8(0x0F);
    __m512i lo[kPanels], hi[kPanels];  // [16 rows] × nibble quads (0..15), u8
#pragma GCC unroll 2
    for (int p = 0; p < kPanels; ++p) {
      const __m512i bytes = _mm512_loadu_si512(block[p] + 32 + 64 * j);
      lo[p] = _mm512_and_si512(bytes, low_nibble);
      hi[p] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibble);
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTile; ++t) {
      const int8_t* xt = rows[t] + 4 * j;
      DpbusdPanels<kPanels>(lo, xt, &acc[0][t], kTile);
      DpbusdPanels<kPanels>(hi, xt + 16, &acc[0][t], kTile);
    }
  }
}

// The int16 panels' integer sums (BlockSums below).
template <TensorType kType, int kTile, int kPanels>
inline void Int16BlockSums(const uint8_t* const* block, const int16_t* xq, int64_t x_stride,
                           __m512i (&acc)[kPanels][kTile]) {
#pragma GCC unroll 24
  for (int i = 0; i < kPanels * kTile; ++i) acc[i / kTile][i % kTile] = _mm512_setzero_si512();
  constexpr int kPairs = kType == TensorType::kQ8_0 ? 16 : 8;  // byte pairs per block row
  if constexpr (kTile >= 3) {
    // Fully unrolled: a partial unroll makes GCC copy every accumulator each iteration (16
    // rows: ~4 % slower).
#pragma GCC unroll 16
    for (int j = 0; j < kPairs; ++j)
      AccumulatePair<kType, kTile, kPanels>(j, block, xq, x_stride, acc);
  } else {
    // Decode: two chains of accumulators (even and odd pairs) so that each vpdpwssd does not
    // wait for the previous one; integer sums are exact, so the split changes no result.
    __m512i odd[kPanels][kTile];
#pragma GCC unroll 4
    for (int i = 0; i < kPanels * kTile; ++i) odd[i / kTile][i % kTile] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int j = 0; j < kPairs; j += 2) {
      AccumulatePair<kType, kTile, kPanels>(j, block, xq, x_stride, acc);
      AccumulatePair<kType, kTile, kPanels>(j + 1, block, xq, x_stride, odd);
    }
#pragma GCC unroll 4
    for (int i = 0; i < kPanels * kTile; ++i) {
      acc[i / kTile][i % kTile] =
          _mm512_add_epi32(acc[i / kTile][i % kTile], odd[i / kTile][i % kTile]);
    }
  }
}

// y[p][t] += Σ over one block of panel p's rows · x row t, for kPanels panels (blocks
// block[p]) and kTile x rows (xq rows x_stride apart, at the block's first column; their
// block scales and sums s_stride apart).
// kBytes: the int8 panels (AccumulateQuad over x8), whose integer sums equal the int16 panels'
// on the same int8 values, and so, through the same float steps, the same bits.
// BlockSums: the integer sums acc; ApplyBlock: the float step. The int8 sums are always
// inlined: GCC left the 2-row tile's as a call (L1-resident, one thread, int8: 2 rows 0.91, 3
// rows 0.76, 5 rows 0.94 of the time inlined).
template <TensorType kType, int kTile, int kPanels, bool kBytes>
inline __attribute__((always_inline)) void BlockSums(const uint8_t* const* block, const int16_t* xq,
                                                     const int8_t* x8, int64_t x_stride,
                                                     __m512i (&acc)[kPanels][kTile]) {
  if constexpr (!kBytes) {
    return Int16BlockSums<kType, kTile, kPanels>(block, xq, x_stride, acc);
  } else {
#pragma GCC unroll 24
    for (int i = 0; i < kPanels * kTile; ++i) acc[i / kTile][i % kTile] = _mm512_setzero_si512();
    constexpr int kPairs = kType == TensorType::kQ8_0 ? 16 : 8;  // byte pairs per block row
    // Half the steps of the pairs; two chains for small tiles, as Int16BlockSums.
    __m512i odd[kPanels][kTile];
#pragma GCC unroll 24
    for (int i = 0; i < kPanels * kTile; ++i) odd[i / kTile][i % kTile] = _mm512_setzero_si512();
    const int8_t* rows[kTile];
    OpaqueRows<kTile>(x8, x_stride, rows);
#pragma GCC unroll 8
    for (int j = 0; j < kPairs / 2; j += 2) {
      AccumulateQuad<kType, kTile, kPanels>(j, block, rows, acc);
      if constexpr (kTile >= 3) {
        AccumulateQuad<kType, kTile, kPanels>(j + 1, block, rows, acc);
      } else {
        AccumulateQuad<kType, kTile, kPanels>(j + 1, block, rows, odd);
      }
    }
    if constexpr (kTile < 3) {
#pragma GCC unroll 4
      for (int i = 0; i < kPanels * kTile; ++i) {
        acc[i / kTile][i % kTile] =
            _mm512_add_epi32(acc[i / kTile][i % kTile], odd[i / kTile][i % kTile]);
      }
    }
  }
}

template <TensorType kType, int kTile, int kPanels, bool kBytes>
inline void ApplyBlock(const uint8_t* const* block, const __m512i (&acc)[kPanels][kTile],
                       const float* s, const int32_t* xsum, int64_t s_stride,
                       __m512 (&y)[kPanels][kTile]) {
#pragma GCC unroll 2
  for (int p = 0; p < kPanels; ++p) {
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block[p])));
#pragma GCC unroll 12
    for (int t = 0; t < kTile; ++t) {
      __m512i dot = acc[p][t];
      if constexpr (kType == TensorType::kQ4_0) {  // Σ (u - 8) · xq = Σ u · xq - 8 Σ xq
        dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(8 * xsum[t * s_stride]));
      } else if constexpr (kBytes) {  // Σ (q + 128) · xq = Σ q · xq + 128 Σ xq
        dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(128 * xsum[t * s_stride]));
      }
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(s[t * s_stride]));
      y[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, y[p][t]);
    }
  }
}

template <TensorType kType, int kTile, int kPanels, bool kBytes>
inline void AccumulateBlock(const uint8_t* const* block, const int16_t* xq, const int8_t* x8,
                            int64_t x_stride, const float* s, const int32_t* xsum, int64_t s_stride,
                            __m512 (&y)[kPanels][kTile]) {
  __m512i acc[kPanels][kTile];
  BlockSums<kType, kTile, kPanels, kBytes>(block, xq, x8, x_stride, acc);
  ApplyBlock<kType, kTile, kPanels, kBytes>(block, acc, s, xsum, s_stride, y);
}

// The blocks b of kPanels panels (panel_bytes apart), each prefetched kPrefetchBytes ahead.
template <TensorType kType, int kPanels>
inline void BlocksAt(const uint8_t* first_panel, int64_t panel_bytes, int64_t b,
                     const uint8_t* (&block)[kPanels]) {
  constexpr int64_t kBlockBytes = BlockBytes<kType>();
  for (int p = 0; p < kPanels; ++p) {
    block[p] = first_panel + p * panel_bytes + b * kBlockBytes;
    for (int64_t line = 0; line < kBlockBytes; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(block[p] + kPrefetchBytes + line), _MM_HINT_T0);
    }
  }
}

// PanelGroup when the n x rows are one tile (decode steps, verifies): the running sums stay in
// registers through the whole row of blocks instead of a load and a store around every block.
// The same float steps in the same order, so the same bits. L2/L3-resident Q8_0 2560 x 960,
// one thread, 5 rows: 85.3 -> 80.9 us (median of 5 interleaved runs).
template <TensorType kType, int kTile, int kPanels, bool kBytes>
void OneTile(const uint8_t* first_panel, int64_t panel_bytes, int64_t cols, const Int16Rows& x,
             float* y, int64_t y_stride, const __mmask16* lanes) {
  __m512 sums[kPanels][kTile];
#pragma GCC unroll 24
  for (int i = 0; i < kPanels * kTile; ++i) sums[i / kTile][i % kTile] = _mm512_setzero_ps();
  const int64_t blocks = cols / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block[kPanels];
    BlocksAt<kType, kPanels>(first_panel, panel_bytes, b, block);
    AccumulateBlock<kType, kTile, kPanels, kBytes>(block, x.q + 32 * b,
                                                   kBytes ? x.q8 + 32 * b : nullptr, cols,
                                                   x.scales + b, x.sums + b, blocks, sums);
  }
#pragma GCC unroll 24
  for (int i = 0; i < kPanels * kTile; ++i) {
    _mm512_mask_storeu_ps(y + (i / kTile) * kPanelRows + (i % kTile) * y_stride, lanes[i / kTile],
                          sums[i / kTile][i % kTile]);
  }
}

// AccumulateBlock for a tile whose running sums live in sums[p][16 t ..]: loaded, updated,
// stored back.
template <TensorType kType, int kTile, int kPanels, bool kBytes>
inline void AccumulateBlockInMemory(const uint8_t* const* block, const int16_t* xq,
                                    const int8_t* x8, int64_t x_stride, const float* s,
                                    const int32_t* xsum, int64_t s_stride, float* const* sums) {
  __m512 y[kPanels][kTile];
  // int8: the integer sums before the running sums come in (both at once outgrow the
  // registers); the same steps, so the same bits.
  __m512i acc[kPanels][kTile];
  if constexpr (kBytes) BlockSums<kType, kTile, kPanels, kBytes>(block, xq, x8, x_stride, acc);
#pragma GCC unroll 24
  for (int i = 0; i < kPanels * kTile; ++i) {
    y[i / kTile][i % kTile] = _mm512_load_ps(sums[i / kTile] + 16 * (i % kTile));
  }
  if constexpr (kBytes) {
    ApplyBlock<kType, kTile, kPanels, kBytes>(block, acc, s, xsum, s_stride, y);
  } else {
    AccumulateBlock<kType, kTile, kPanels, kBytes>(block, xq, x8, x_stride, s, xsum, s_stride, y);
  }
#pragma GCC unroll 24
  for (int i = 0; i < kPanels * kTile; ++i) {
    _mm512_store_ps(sums[i / kTile] + 16 * (i % kTile), y[i / kTile][i % kTile]);
  }
}

// kPanels consecutive panels for n x rows (n <= kMaxPanelGroup), in tiles of kTile or
// kTile - 1 rows; the same loop order and prefetching as the float panel kernel.
template <TensorType kType, int kTile, int kPanels, bool kBytes>
void PanelGroup(const uint8_t* first_panel, int64_t panel_bytes, int64_t cols, const Int16Rows& x,
                int n, float* y, int64_t y_stride, const __mmask16* lanes) {
  // Up to 6 rows the register running sums fit beside the accumulators (2 panels: 12 + 12).
  if constexpr (kTile <= 6) {
    if (n == kTile) {
      return OneTile<kType, kTile, kPanels, kBytes>(first_panel, panel_bytes, cols, x, y, y_stride,
                                                    lanes);
    }
  }
  alignas(64) float sums[kPanels][kMaxPanelGroup * 16];
  for (int p = 0; p < kPanels; ++p) std::fill(sums[p], sums[p] + 16 * n, 0.0f);
  const int tiles = (n + kTile - 1) / kTile;
  const int big_tiles = n - tiles * (kTile - 1);
  const int64_t blocks = cols / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block[kPanels];
    BlocksAt<kType, kPanels>(first_panel, panel_bytes, b, block);
    int row = 0;
    for (int k = 0; k < tiles; ++k) {
      const int16_t* xt = x.q + row * cols + 32 * b;
      const int8_t* x8t = kBytes ? x.q8 + row * cols + 32 * b : nullptr;
      const float* st = x.scales + row * blocks + b;
      const int32_t* sum_t = x.sums + row * blocks + b;
      float* out[kPanels];
      for (int p = 0; p < kPanels; ++p) out[p] = sums[p] + 16 * row;
      if (k < big_tiles) {
        AccumulateBlockInMemory<kType, kTile, kPanels, kBytes>(block, xt, x8t, cols, st, sum_t,
                                                               blocks, out);
        row += kTile;
      } else if constexpr (kTile > 1) {
        AccumulateBlockInMemory<kType, kTile - 1, kPanels, kBytes>(block, xt, x8t, cols, st, sum_t,
                                                                   blocks, out);
        row += kTile - 1;
      }
    }
  }
  for (int p = 0; p < kPanels; ++p) {
    for (int t = 0; t < n; ++t) {
      _mm512_mask_storeu_ps(y + p * kPanelRows + t * y_stride, lanes[p],
                            _mm512_load_ps(sums[p] + 16 * t));
    }
  }
}

// The largest tile: kPanels · kTile accumulators, kPanels weight registers and a broadcast must
// fit the 32 zmm registers. At 12 (24 accumulators) the compiler spills them: on the
// SmolLM2-360M-shape Q8_0 fixture a 12-row pass cost 3.6 decode steps against 2.2 in two tiles
// of 6, a 24-row pass 7.0 against 4.2, and prefill ran at 232 instead of 383 tok/s.
constexpr int kMaxVnniTile = 8;

template <TensorType kType, int kPanels, bool kBytes>
void PanelGroupForTile(int tile, const uint8_t* first_panel, int64_t panel_bytes, int64_t cols,
                       const Int16Rows& x, int n, float* y, int64_t y_stride,
                       const __mmask16* lanes) {
  static_assert(kMaxVnniTile == 8, "one case per tile size");
  switch (tile) {
#define TANDEM_VNNI_CASE(k)                                                               \
  case k:                                                                                 \
    return PanelGroup<kType, k, kPanels, kBytes>(first_panel, panel_bytes, cols, x, n, y, \
                                                 y_stride, lanes);
    TANDEM_VNNI_CASE(1)
    TANDEM_VNNI_CASE(2)
    TANDEM_VNNI_CASE(3)
    TANDEM_VNNI_CASE(4)
    TANDEM_VNNI_CASE(5)
    TANDEM_VNNI_CASE(6)
    TANDEM_VNNI_CASE(7)
    default:
      return PanelGroup<kType, 8, kPanels, kBytes>(first_panel, panel_bytes, cols, x, n, y,
                                                   y_stride, lanes);
#undef TANDEM_VNNI_CASE
  }
}

template <TensorType kType, bool kBytes>
void PanelsForType(int tile, int panels, const uint8_t* first_panel, int64_t panel_bytes,
                   int64_t cols, const Int16Rows& x, int n, float* y, int64_t y_stride,
                   const __mmask16* lanes) {
  if (panels == 2) {
    return PanelGroupForTile<kType, 2, kBytes>(tile, first_panel, panel_bytes, cols, x, n, y,
                                               y_stride, lanes);
  }
  PanelGroupForTile<kType, 1, kBytes>(tile, first_panel, panel_bytes, cols, x, n, y, y_stride,
                                      lanes);
}

// One block of 32 at x: q = x · (limit / max|x|) rounded to nearest even, given the block's
// inv = limit / max|x| (0 for an all-zero block); returns the 16 lanes' partial sums of q.
// The values as int16 in q unless it is null; with q8 (limit 127) also as bytes there, and
// with half the sums of the block's two 16-column halves in half[0], half[1].
inline __m512i QuantizeBlock(const float* x, float inv, int16_t* q, int8_t* q8, int32_t* half) {
  const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
  // Round to nearest even (the default MXCSR mode); saturation only guards the last ulp.
  const __m512i q_lo = _mm512_cvtps_epi32(_mm512_mul_ps(lo, _mm512_set1_ps(inv)));
  const __m512i q_hi = _mm512_cvtps_epi32(_mm512_mul_ps(hi, _mm512_set1_ps(inv)));
  // Saturating pack (per 128-bit lane: 4 of q_lo, 4 of q_hi), then the lanes into order.
  const __m512i packed = _mm512_packs_epi32(q_lo, q_hi);
  const __m512i ordered =
      _mm512_permutexvar_epi64(_mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0), packed);
  if (q != nullptr) _mm512_storeu_si512(q, ordered);
  if (q8 != nullptr) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q8), _mm512_cvtsepi16_epi8(ordered));
  }
  if (half != nullptr) {
    half[0] = _mm512_reduce_add_epi32(q_lo);
    half[1] = _mm512_reduce_add_epi32(q_hi);
  }
  return _mm512_add_epi32(q_lo, q_hi);
}

inline __m512 BlockAbsMax(const float* x) {
  return _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x)), _mm512_abs_ps(_mm512_loadu_ps(x + 16)));
}

// kMax: float max; otherwise int32 sums (the vectors' bits).
template <bool kMax>
inline __m512 Combine(__m512 a, __m512 b) {
  if constexpr (kMax) return _mm512_max_ps(a, b);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

// Lane j = the reduction (Combine<kMax>) of v[j]'s 16 lanes, for 16 vectors: four rounds of
// pairing (512 -> 256 -> 128 -> 64 -> 32 bits), then a permutation into order. Max and
// integer sums are exact, so the result equals reducing each vector on its own.
template <bool kMax>
inline __m512 ReduceSixteen(__m512 (&v)[16]) {
  constexpr auto op = Combine<kMax>;
  __m512 t[8], u[4], w[2];
  for (int i = 0; i < 8; ++i) {  // 128-bit chunks: [a0+a2, a1+a3, b0+b2, b1+b3]
    t[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int i = 0; i < 4; ++i) {  // chunk k: vector 4i + k, 4 lanes
    u[i] = op(_mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
              _mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int i = 0; i < 2; ++i) {  // chunk k: vectors 8i + k and 8i + 4 + k, 2 lanes each
    const __m512d a = _mm512_castps_pd(u[2 * i]), b = _mm512_castps_pd(u[2 * i + 1]);
    w[i] =
        op(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Lane 4k + m: vector k + 4m.
  const __m512 r = op(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                      _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(order, r);
}

}  // namespace

// Blocks 16 at a time with their reductions done together (a block's horizontal max and sum
// alone are shuffle chains of ~8 steps each), then the rest one by one: the same numbers.
void QuantizeRowsInt16(const float* x, int64_t n, int64_t cols, int16_t* q, float* scales,
                       int32_t* sums, ActivationPrecision precision, int8_t* q8,
                       int32_t* half_sums) {
  const int64_t blocks = n * (cols / 32);  // rows are `cols` apart and cols = 32 · blocks
  const float limit = static_cast<float>(ActivationLimit(precision));
  if (precision != ActivationPrecision::kInt8) {
    q8 = nullptr;
    half_sums = nullptr;
  }
  int64_t i = 0;
  for (; i + 16 <= blocks; i += 16) {
    __m512 v[16];
    for (int j = 0; j < 16; ++j) v[j] = BlockAbsMax(x + (i + j) * 32);
    const __m512 amax = ReduceSixteen<true>(v);
    const __m512 limits = _mm512_set1_ps(limit);
    _mm512_storeu_ps(scales + i, _mm512_div_ps(amax, limits));
    alignas(64) float inv[16];
    _mm512_store_ps(
        inv, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ), limits,
                                 amax));
    for (int j = 0; j < 16; ++j) {
      v[j] = _mm512_castsi512_ps(
          QuantizeBlock(x + (i + j) * 32, inv[j], q == nullptr ? nullptr : q + (i + j) * 32,
                        q8 == nullptr ? nullptr : q8 + (i + j) * 32,
                        half_sums == nullptr ? nullptr : half_sums + 2 * (i + j)));
    }
    const __m512 total = ReduceSixteen<false>(v);
    _mm512_storeu_si512(sums + i, _mm512_castps_si512(total));
  }
  for (; i < blocks; ++i) {
    const float amax = _mm512_reduce_max_ps(BlockAbsMax(x + i * 32));
    const float inv = amax > 0 ? limit / amax : 0.0f;
    scales[i] = amax / limit;
    sums[i] = _mm512_reduce_add_epi32(
        QuantizeBlock(x + i * 32, inv, q == nullptr ? nullptr : q + i * 32,
                      q8 == nullptr ? nullptr : q8 + i * 32,
                      half_sums == nullptr ? nullptr : half_sums + 2 * i));
  }
}

void PanelsVnni(const WeightMatrix& w, int64_t first_panel, int panels, const Int16Rows& x, int n,
                float* y) {
  const int64_t panel_bytes = PanelBytes(w.type, w.cols);
  __mmask16 lanes[2];
  for (int p = 0; p < panels; ++p) {
    const int64_t valid = std::min<int64_t>(kPanelRows, w.rows - (first_panel + p) * kPanelRows);
    lanes[p] = static_cast<__mmask16>((1u << valid) - 1);
  }
  const int tiles = (n + kMaxVnniTile - 1) / kMaxVnniTile;
  const int tile = (n + tiles - 1) / tiles;
  const uint8_t* data = w.packed + first_panel * panel_bytes;
  float* out = y + first_panel * kPanelRows;
  const bool bytes = w.int8_panels;  // MatMulPanels then quantized x into q8 too
  if (w.type == TensorType::kQ4_0) {
    return bytes ? PanelsForType<TensorType::kQ4_0, true>(tile, panels, data, panel_bytes, w.cols,
                                                          x, n, out, w.rows, lanes)
                 : PanelsForType<TensorType::kQ4_0, false>(tile, panels, data, panel_bytes, w.cols,
                                                           x, n, out, w.rows, lanes);
  }
  return bytes ? PanelsForType<TensorType::kQ8_0, true>(tile, panels, data, panel_bytes, w.cols, x,
                                                        n, out, w.rows, lanes)
               : PanelsForType<TensorType::kQ8_0, false>(tile, panels, data, panel_bytes, w.cols, x,
                                                         n, out, w.rows, lanes);
}

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected (VNNI is never detected), kept linkable.
namespace tandem::internal {
void QuantizeRowsInt16(const float*, int64_t, int64_t, int16_t*, float*, int32_t*,
                       ActivationPrecision, int8_t*, int32_t*) {}
void PanelsVnni(const WeightMatrix&, int64_t, int, const Int16Rows&, int, float*) {}
}  // namespace tandem::internal
#endif
