// The AVX-512 VNNI kernel for Q5_0, Q4_K, Q5_K and Q6_K panels (packed_kquant.h), on the
// int16 activations of the Q8_0 / Q4_0 kernel (matmul_panel_vnni.cc: x ≈ s · xq per
// 32-column block, with the block's Σ xq). Per group of columns and x row t:
//   A[t, r], B[t, r] = Σ q[r, c] · xq[t, c] over the group's two halves   exact, int32
// then, per row lane r, once per group:
//   Q5_0        y += float(A + B - 16 Σxq) · (d · s)               (q = 5-bit value, 0..31)
//   Q4_K, Q5_K  y += float(A) · (d·sc_a · s_a) - dmin·m_a · (s_a Σxq_a), the same for B
//               (halves = the 32-column sub-blocks 2g, 2g + 1, each its own x block)
//   Q6_K        y += (float(A) · d·sc_a + float(B) · d·sc_b) · s   (q - 32 in -32..31;
//               halves = the 16-column sub-blocks of one x block)
// Batch invariance: the integer sums are exact and the float steps per (x row, group) are
// fixed, so y[t, r] does not depend on n, the tiling, the pairing of panels or the thread.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_kquant.h"
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

using T = TensorType;

// Bytes of a row block (tensor_type.cc's table, as a constant).
constexpr int64_t GetTraitsBytes(T type) {
  switch (type) {
    case T::kQ5_0:
      return 22;
    case T::kQ4_1:
      return 20;
    case T::kQ5_1:
      return 24;
    case T::kIQ4_NL:
      return 18;
    case T::kIQ4_XS:
      return 136;
    case T::kQ4_K:
      return 144;
    case T::kQ5_K:
      return 176;
    case T::kQ2_K:
      return 84;
    case T::kQ3_K:
      return 110;
    default:
      return 210;  // Q6_K
  }
}

// Types whose group halves share one scale: both halves go into one integer sum.
template <T kType>
constexpr bool kOneSum = !(kType == T::kQ4_K || kType == T::kQ5_K || kType == T::kQ6_K ||
                           kType == T::kQ2_K || kType == T::kQ3_K);
// Q2_K / Q3_K: 2-bit fields, four column pairs per 32-byte load (packed_kquant.h).
template <T kType>
constexpr bool kTwoBit = kType == T::kQ2_K || kType == T::kQ3_K;
// Types whose blocks add a min (Q4_1, Q5_1: + m) or subtract one (Q4_K, Q5_K: - dmin · m).
template <T kType>
constexpr bool kAddsMin = kType == T::kQ4_1 || kType == T::kQ5_1;
template <T kType>
constexpr bool kSubtractsMin = kType == T::kQ4_K || kType == T::kQ5_K;

// IQ4_NL's code book as int16, twice (vpermw indexes 32 entries; nibbles reach 16).
alignas(64) constexpr int16_t kCodeBook[32] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Per type: bytes and columns of a panel super-block, columns and pair steps of a group.
template <T kType>
struct Shape {
  static constexpr int64_t kBytes = GetTraitsBytes(kType) * 16;
  static constexpr int kCols =
      kType == T::kQ5_0 || kType == T::kQ4_1 || kType == T::kQ5_1 || kType == T::kIQ4_NL ? 32 : 256;
  static constexpr int kGroupCols = kType == T::kQ4_K || kType == T::kQ5_K ? 64 : 32;
  static constexpr int kGroups = kCols / kGroupCols;
  static constexpr int kSteps = kGroupCols / 4;  // each step: a column pair of each half
  static constexpr int kHalfCols = kGroupCols / 2;
  static constexpr int kMaxTile = 8;  // accumulators and decoding fit the 32 zmm
};

constexpr int64_t kPrefetchBytes = 2048;

inline __m512i PairOf(const int16_t* xq) {
  int32_t pair;
  std::memcpy(&pair, xq, sizeof(pair));
  return _mm512_set1_epi32(pair);
}

inline __m512i Load256(const uint8_t* p) {
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512i AddFifthBits(__m512i w, const uint8_t* mask) {
  uint32_t bits;
  std::memcpy(&bits, mask, 4);
  return _mm512_mask_add_epi16(w, _cvtu32_mask32(bits), w, _mm512_set1_epi16(16));  // 0..15 + 16
}

// The 16 rows' quants of step s of group g, columns (2s, 2s + 1) of the group's half h, as
// int16 in *wa (Q6_K already minus 32); the kOneSum types give both halves' (*wa, *wb).
template <T kType>
inline void DecodeStep(const uint8_t* sb, int g, int s, int h, __m512i* wa, __m512i* wb) {
  const __m512i nibble = _mm512_set1_epi16(0x0F);
  if constexpr (kOneSum<kType>) {
    constexpr int kNibbles = kType == T::kQ5_0     ? 96
                             : kType == T::kQ4_1   ? 64
                             : kType == T::kQ5_1   ? 128
                             : kType == T::kIQ4_NL ? 32
                                                   : 128;  // IQ4_XS, then 256 per group
    const __m512i v = Load256(sb + kNibbles + 256 * g + 32 * s);
    *wa = _mm512_and_si512(v, nibble);
    *wb = _mm512_srli_epi16(v, 4);
    if constexpr (kType == T::kQ5_0 || kType == T::kQ5_1) {
      constexpr int kMasks = kType == T::kQ5_0 ? 32 : 64;
      *wa = AddFifthBits(*wa, sb + kMasks + 8 * s);
      *wb = AddFifthBits(*wb, sb + kMasks + 4 + 8 * s);
    } else if constexpr (kType == T::kIQ4_NL || kType == T::kIQ4_XS) {
      const __m512i book = _mm512_load_si512(kCodeBook);
      *wa = _mm512_permutexvar_epi16(*wa, book);
      *wb = _mm512_permutexvar_epi16(*wb, book);
    }
  } else if constexpr (kTwoBit<kType>) {
    constexpr int kQuants = kType == T::kQ2_K ? 320 : 224;
    const int pair = 8 * h + s;
    const __m512i v = Load256(sb + kQuants + 128 * g + 32 * (pair / 4));
    *wa = _mm512_and_si512(_mm512_srl_epi16(v, _mm_cvtsi32_si128(2 * (pair % 4))),
                           _mm512_set1_epi16(3));
    if constexpr (kType == T::kQ3_K) {  // + 4 where the high bit is set, then - 4
      uint32_t bits;
      std::memcpy(&bits, sb + 1248 + 64 * g + 4 * pair, 4);
      *wa = _mm512_sub_epi16(
          _mm512_mask_add_epi16(*wa, _cvtu32_mask32(bits), *wa, _mm512_set1_epi16(4)),
          _mm512_set1_epi16(4));
    }
  } else if constexpr (kType == T::kQ4_K || kType == T::kQ5_K) {
    const __m512i v = Load256(sb + (kType == T::kQ5_K ? 768 : 256) + 512 * g + 32 * s);
    *wa = h == 0 ? _mm512_and_si512(v, nibble) : _mm512_srli_epi16(v, 4);
    if constexpr (kType == T::kQ5_K) *wa = AddFifthBits(*wa, sb + 256 + 8 * (16 * g + s) + 4 * h);
  } else {
    const __m512i v = Load256(sb + 288 + 256 * g + 32 * s);
    const __m512i hv = Load256(sb + 2336 + 128 * g + 32 * (s / 2));
    // Bits of the high byte: 0-1 (s even, h 0), 2-3 (s even, h 1), 4-5 (s odd, h 0), 6-7.
    const int shift = 4 * (s % 2) + 2 * h;
    const __m512i high = _mm512_slli_epi16(hv, 4);  // a byte: bits 4..11 of the lane
    const __m512i placed =
        _mm512_and_si512(_mm512_srl_epi16(high, _mm_cvtsi32_si128(shift)), _mm512_set1_epi16(0x30));
    const __m512i low = h == 0 ? _mm512_and_si512(v, nibble) : _mm512_srli_epi16(v, 4);
    *wa = _mm512_sub_epi16(_mm512_or_si512(low, placed), _mm512_set1_epi16(32));
  }
  (void)wb;
}

inline __m512i Shr(__m512i v, int n) { return _mm512_srlv_epi32(v, _mm512_set1_epi32(n)); }

// Q4_K / Q5_K sub-block j's six-bit scale and min for the 16 rows, from the scale words.
inline void ScaleMin(const uint8_t* sb, int j, __m512i* sc, __m512i* m) {
  const __m512i w0 = _mm512_loadu_si512(sb + 64), w1 = _mm512_loadu_si512(sb + 128);
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15);
  const __m512i two = _mm512_set1_epi32(3);
  if (j < 4) {
    *sc = _mm512_and_si512(Shr(w0, 8 * j), six);
    *m = _mm512_and_si512(Shr(w1, 8 * j), six);
    return;
  }
  const __m512i w2 = _mm512_loadu_si512(sb + 192);
  const int k = 8 * (j - 4);
  *sc = _mm512_or_si512(_mm512_and_si512(Shr(w2, k), four),
                        _mm512_slli_epi32(_mm512_and_si512(Shr(w0, k + 6), two), 4));
  *m = _mm512_or_si512(_mm512_and_si512(Shr(w2, k + 4), four),
                       _mm512_slli_epi32(_mm512_and_si512(Shr(w1, k + 6), two), 4));
}

inline __m512 HalfVector(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Q6_K sub-block k's scale for the 16 rows, times d.
inline __m512 Q6Scale(const uint8_t* sb, __m512 d, int k) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 32 + 16 * k));
  return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)));
}

// The x side of one tile: rows `x_stride` apart at the group's first column, their block
// scales and sums `s_stride` apart at the group's first block.
struct TileX {
  const int16_t* q;
  int64_t x_stride;
  const float* s;
  const int32_t* sum;
  int64_t s_stride;
};

// acc[p][t] = Σ over half h of group g (both halves for Q5_0) of super-block sb[p]'s quants ·
// x row t's. The steps are spread over kChains independent accumulators (integer sums, so
// their split never changes the result) to keep small tiles from waiting on vpdpwssd latency.
template <T kType, int kTile, int kPanels>
inline void HalfSums(const uint8_t* const* sb, int g, int h, const TileX& x,
                     __m512i (&acc)[kPanels][kTile]) {
  using S = Shape<kType>;
  constexpr int kChains = kPanels * kTile >= 8 ? 1 : kPanels * kTile >= 4 ? 2 : 4;
  __m512i c[kChains][kPanels][kTile];
#pragma GCC unroll 16
  for (int i = 0; i < kChains * kPanels * kTile; ++i) {
    c[i / (kPanels * kTile)][(i / kTile) % kPanels][i % kTile] = _mm512_setzero_si512();
  }
  const int16_t* xq = x.q + (kOneSum<kType> ? 0 : h * S::kHalfCols);
  for (int s0 = 0; s0 < S::kSteps; s0 += kChains) {
#pragma GCC unroll 4
    for (int ch = 0; ch < kChains; ++ch) {
      const int s = s0 + ch;
      __m512i wa[kPanels], wb[kPanels];
#pragma GCC unroll 2
      for (int p = 0; p < kPanels; ++p) DecodeStep<kType>(sb[p], g, s, h, &wa[p], &wb[p]);
#pragma GCC unroll 12
      for (int t = 0; t < kTile; ++t) {
        const __m512i xa = PairOf(xq + t * x.x_stride + 2 * s);
        if constexpr (kOneSum<kType>) {  // one scale for the whole group: one sum
          const __m512i xb = PairOf(xq + t * x.x_stride + S::kHalfCols + 2 * s);
#pragma GCC unroll 2
          for (int p = 0; p < kPanels; ++p) {
            c[ch][p][t] =
                _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(c[ch][p][t], wa[p], xa), wb[p], xb);
          }
        } else {
#pragma GCC unroll 2
          for (int p = 0; p < kPanels; ++p)
            c[ch][p][t] = _mm512_dpwssd_epi32(c[ch][p][t], wa[p], xa);
        }
      }
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kPanels * kTile; ++i) {
    __m512i sum = c[0][i / kTile][i % kTile];
#pragma GCC unroll 4
    for (int ch = 1; ch < kChains; ++ch) sum = _mm512_add_epi32(sum, c[ch][i / kTile][i % kTile]);
    acc[i / kTile][i % kTile] = sum;
  }
}

// The 16 rows' float scales of each sub-block of super-block sb (d·sc; d for Q5_0) into
// scale[16 j ..], and for Q4_K / Q5_K their mins (dmin·m) into min[16 j ..]: computed once per
// super-block, shared by every tile.
template <T kType>
inline void SuperScales(const uint8_t* sb, float* scale, float* min) {
  const __m512 d = HalfVector(sb);
  if constexpr (kType == T::kIQ4_XS) {
    // Sub-block j's scale: 4 bits of the u32 at 64 + 4r, 2 of the u16 at 32 + 2r, minus 32.
    const __m512i low = _mm512_loadu_si512(sb + 64);
    const __m512i high =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 32)));
    for (int j = 0; j < 8; ++j) {
      const __m512i ls = _mm512_or_si512(
          _mm512_and_si512(Shr(low, 4 * j), _mm512_set1_epi32(15)),
          _mm512_slli_epi32(_mm512_and_si512(Shr(high, 2 * j), _mm512_set1_epi32(3)), 4));
      const __m512i centred = _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
      _mm512_store_ps(scale + 16 * j, _mm512_mul_ps(d, _mm512_cvtepi32_ps(centred)));
    }
  } else if constexpr (kType == T::kQ2_K) {
    const __m512 dmin = HalfVector(sb + 32);
    for (int k = 0; k < 16; ++k) {
      const __m512i b =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 64 + 16 * k)));
      const __m512i sc = _mm512_and_si512(b, _mm512_set1_epi32(15));
      _mm512_store_ps(scale + 16 * k, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
      _mm512_store_ps(min + 16 * k,
                      _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4))));
    }
  } else if constexpr (kType == T::kQ3_K) {
    // Sub-block j: 4 bits of word (j / 4) % 2 at 8 (j % 4) + 4 (j >= 8), 2 bits of word 2 at
    // 8 (j % 4) + 2 (j / 4); minus 32.
    const __m512i w[3] = {_mm512_loadu_si512(sb + 32), _mm512_loadu_si512(sb + 96),
                          _mm512_loadu_si512(sb + 160)};
    for (int j = 0; j < 16; ++j) {
      const __m512i low = _mm512_and_si512(Shr(w[(j / 4) % 2], 8 * (j % 4) + (j >= 8 ? 4 : 0)),
                                           _mm512_set1_epi32(15));
      const __m512i high =
          _mm512_and_si512(Shr(w[2], 8 * (j % 4) + 2 * (j / 4)), _mm512_set1_epi32(3));
      const __m512i ls =
          _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
      _mm512_store_ps(scale + 16 * j, _mm512_mul_ps(d, _mm512_cvtepi32_ps(ls)));
    }
  } else if constexpr (kOneSum<kType>) {
    _mm512_store_ps(scale, d);
    if constexpr (kAddsMin<kType>) _mm512_store_ps(min, HalfVector(sb + 32));
  } else if constexpr (kType == T::kQ6_K) {
    for (int k = 0; k < 16; ++k) _mm512_store_ps(scale + 16 * k, Q6Scale(sb, d, k));
  } else {
    const __m512 dmin = HalfVector(sb + 32);
    for (int j = 0; j < 8; ++j) {
      __m512i sc, m;
      ScaleMin(sb, j, &sc, &m);
      _mm512_store_ps(scale + 16 * j, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
      _mm512_store_ps(min + 16 * j, _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m)));
    }
  }
}

// sums[p][16 t ..] += half h of group g · x row t (acc from HalfSums), with the super-block's
// SuperScales of each panel.
template <T kType, int kTile, int kPanels>
inline void ApplyHalf(int g, int h, const TileX& x, const __m512i (&acc)[kPanels][kTile],
                      const float* const* scales, const float* const* mins, float* const* sums) {
  const int sub = kType == T::kIQ4_XS ? g : kOneSum<kType> ? 0 : 2 * g + h;
  // Q4_K / Q5_K halves are whole x blocks (the second is the next one); Q6_K's halves and
  // Q5_0's block share one.
  const int block = kType == T::kQ4_K || kType == T::kQ5_K ? h : 0;
#pragma GCC unroll 2
  for (int p = 0; p < kPanels; ++p) {
    const __m512 scale = _mm512_load_ps(scales[p] + 16 * sub);
#pragma GCC unroll 12
    for (int t = 0; t < kTile; ++t) {
      float* out = sums[p] + 16 * t;
      const float s = x.s[t * x.s_stride + block];
      const int32_t xsum = x.sum[t * x.s_stride + block];
      __m512i dot = acc[p][t];
      if constexpr (kType == T::kQ5_0) dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(16 * xsum));
      __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(scale, _mm512_set1_ps(s)),
                                 _mm512_load_ps(out));
      if constexpr (kSubtractsMin<kType>) {
        v = _mm512_fnmadd_ps(_mm512_load_ps(mins[p] + 16 * sub),
                             _mm512_set1_ps(s * static_cast<float>(xsum)), v);
      } else if constexpr (kType == T::kQ2_K) {  // the min covers this half's 16 columns
        const int16_t* xq = x.q + t * x.x_stride + 16 * h;
        int32_t half_sum = 0;
        for (int c = 0; c < 16; ++c) half_sum += xq[c];
        v = _mm512_fnmadd_ps(_mm512_load_ps(mins[p] + 16 * sub),
                             _mm512_set1_ps(s * static_cast<float>(half_sum)), v);
      } else if constexpr (kAddsMin<kType>) {
        v = _mm512_fmadd_ps(_mm512_load_ps(mins[p]), _mm512_set1_ps(s * static_cast<float>(xsum)),
                            v);
      }
      _mm512_store_ps(out, v);
    }
  }
}

// sums[p][16 t ..] += group g of super-block sb[p] · x row t, for kTile rows and kPanels panels.
template <T kType, int kTile, int kPanels>
inline void Group(const uint8_t* const* sb, int g, const TileX& x, const float* const* scales,
                  const float* const* mins, float* const* sums) {
  constexpr int kHalves = kOneSum<kType> ? 1 : 2;
  for (int h = 0; h < kHalves; ++h) {
    __m512i acc[kPanels][kTile];
    HalfSums<kType, kTile, kPanels>(sb, g, h, x, acc);
    ApplyHalf<kType, kTile, kPanels>(g, h, x, acc, scales, mins, sums);
  }
}

// kPanels consecutive panels for n x rows (n <= kMaxPanelGroup) in tiles of kTile or
// kTile - 1 rows, super-block by super-block, group by group.
template <T kType, int kTile, int kPanels>
void PanelGroup(const uint8_t* first_panel, int64_t panel_bytes, int64_t cols, const Int16Rows& x,
                int n, float* y, int64_t y_stride, const __mmask16* lanes) {
  using S = Shape<kType>;
  alignas(64) float sums[kPanels][kMaxPanelGroup * 16];
  alignas(64) float scale[kPanels][16 * 16];
  alignas(64) float min[kPanels][16 * 16];
  for (int p = 0; p < kPanels; ++p) std::fill(sums[p], sums[p] + 16 * n, 0.0f);
  const int tiles = (n + kTile - 1) / kTile;
  const int big_tiles = n - tiles * (kTile - 1);
  const int64_t blocks = cols / 32;
  for (int64_t b = 0; b < cols / S::kCols; ++b) {
    const uint8_t* sb[kPanels];
    for (int p = 0; p < kPanels; ++p) {
      sb[p] = first_panel + p * panel_bytes + b * S::kBytes;
      for (int64_t line = 0; line < S::kBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(sb[p] + kPrefetchBytes + line), _MM_HINT_T0);
      }
      SuperScales<kType>(sb[p], scale[p], min[p]);
    }
    const float* scales[kPanels];
    const float* mins[kPanels];
    for (int p = 0; p < kPanels; ++p) {
      scales[p] = scale[p];
      mins[p] = min[p];
    }
    for (int g = 0; g < S::kGroups; ++g) {
      const int64_t col = b * S::kCols + g * S::kGroupCols;
      int row = 0;
      for (int k = 0; k < tiles; ++k) {
        const TileX tx{x.q + row * cols + col, cols, x.scales + row * blocks + col / 32,
                       x.sums + row * blocks + col / 32, blocks};
        float* out[kPanels];
        for (int p = 0; p < kPanels; ++p) out[p] = sums[p] + 16 * row;
        if (k < big_tiles) {
          Group<kType, kTile, kPanels>(sb, g, tx, scales, mins, out);
          row += kTile;
        } else if constexpr (kTile > 1) {
          Group<kType, kTile - 1, kPanels>(sb, g, tx, scales, mins, out);
          row += kTile - 1;
        }
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

template <T kType, int kPanels>
void ForTile(int tile, const uint8_t* first_panel, int64_t panel_bytes, int64_t cols,
             const Int16Rows& x, int n, float* y, int64_t y_stride, const __mmask16* lanes) {
#define TANDEM_KQ_CASE(k)                                                                     \
  case k:                                                                                     \
    if constexpr (k <= Shape<kType>::kMaxTile) {                                              \
      return PanelGroup<kType, k, kPanels>(first_panel, panel_bytes, cols, x, n, y, y_stride, \
                                           lanes);                                            \
    }                                                                                         \
    break;
  switch (tile) {
    TANDEM_KQ_CASE(1)
    TANDEM_KQ_CASE(2)
    TANDEM_KQ_CASE(3)
    TANDEM_KQ_CASE(4)
    TANDEM_KQ_CASE(5)
    TANDEM_KQ_CASE(6)
    TANDEM_KQ_CASE(7)
    TANDEM_KQ_CASE(8)
    TANDEM_KQ_CASE(9)
    TANDEM_KQ_CASE(10)
    TANDEM_KQ_CASE(11)
    TANDEM_KQ_CASE(12)
    default:
      break;
  }
#undef TANDEM_KQ_CASE
}

template <T kType>
void ForType(int panels, const WeightMatrix& w, int64_t first_panel, const Int16Rows& x, int n,
             float* y, const __mmask16* lanes) {
  const int64_t panel_bytes = PanelBytes(w.type, w.cols);
  // Tiles as even as possible; a row's result does not depend on its tile.
  constexpr int kMax = Shape<kType>::kMaxTile;
  const int tiles = (n + kMax - 1) / kMax;
  const int tile = (n + tiles - 1) / tiles;
  const uint8_t* data = w.packed + first_panel * panel_bytes;
  float* out = y + first_panel * kPanelRows;
  if (panels == 2) {
    return ForTile<kType, 2>(tile, data, panel_bytes, w.cols, x, n, out, w.rows, lanes);
  }
  ForTile<kType, 1>(tile, data, panel_bytes, w.cols, x, n, out, w.rows, lanes);
}

}  // namespace

void PanelsVnniKQuant(const WeightMatrix& w, int64_t first_panel, int panels, const Int16Rows& x,
                      int n, float* y) {
  __mmask16 lanes[2];
  for (int p = 0; p < panels; ++p) {
    const int64_t valid = std::min<int64_t>(kPanelRows, w.rows - (first_panel + p) * kPanelRows);
    lanes[p] = static_cast<__mmask16>((1u << valid) - 1);
  }
  switch (w.type) {
    case T::kQ5_0:
      return ForType<T::kQ5_0>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ4_1:
      return ForType<T::kQ4_1>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ5_1:
      return ForType<T::kQ5_1>(panels, w, first_panel, x, n, y, lanes);
    case T::kIQ4_NL:
      return ForType<T::kIQ4_NL>(panels, w, first_panel, x, n, y, lanes);
    case T::kIQ4_XS:
      return ForType<T::kIQ4_XS>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ2_K:
      return ForType<T::kQ2_K>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ3_K:
      return ForType<T::kQ3_K>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ4_K:
      return ForType<T::kQ4_K>(panels, w, first_panel, x, n, y, lanes);
    case T::kQ5_K:
      return ForType<T::kQ5_K>(panels, w, first_panel, x, n, y, lanes);
    default:
      return ForType<T::kQ6_K>(panels, w, first_panel, x, n, y, lanes);
  }
}

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected (VNNI is never detected), kept linkable.
namespace tandem::internal {
void PanelsVnniKQuant(const WeightMatrix&, int64_t, int, const Int16Rows&, int, float*) {}
}  // namespace tandem::internal
#endif
