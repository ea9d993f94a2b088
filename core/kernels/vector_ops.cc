#include "core/kernels/vector_ops.h"

#include <algorithm>

#include "core/kernels/avx512_support.h"
#include "core/model/tensor_type.h"

namespace tandem {
namespace {

// Where the rows of a weighted sum live: one contiguous [n][dim] array (with optional
// per-row scales), or blocks of kKeyBlock rows ([16][dim] each, scales [16] each) anywhere.
// Both give the kernels the same rows in the same order, so the sums are bit-identical.
template <typename T>
struct ContiguousRows {
  const T* rows;
  const float* scales;  // null: unscaled
  int64_t dim;
  bool scaled() const { return scales != nullptr; }
  const T* Row(int64_t p) const { return rows + p * dim; }
  float Scale(int64_t p) const { return scales[p]; }
  // The rows from p on that follow row p in memory (with their scales): all of them.
  int64_t SegmentRows(int64_t p, int64_t n) const { return n - p; }
  const float* SegmentScales(int64_t p) const { return scales + p; }
};

template <typename T>
struct BlockRows {
  const T* const* blocks;
  const float* const* scales;  // null: unscaled
  int64_t dim;
  bool scaled() const { return scales != nullptr; }
  const T* Row(int64_t p) const { return blocks[p / kKeyBlock] + (p % kKeyBlock) * dim; }
  float Scale(int64_t p) const { return scales[p / kKeyBlock][p % kKeyBlock]; }
  // From p (a block start) on: the rest of its block.
  int64_t SegmentRows(int64_t p, int64_t n) const { return std::min(kKeyBlock, n - p); }
  const float* SegmentScales(int64_t p) const { return scales[p / kKeyBlock]; }
};

}  // namespace

namespace reference {
namespace {

inline float ToFloat(float v) { return v; }
inline float ToFloat(uint16_t v) { return Fp16ToF32(v); }
inline float ToFloat(int8_t v) { return static_cast<float>(v); }

template <typename T>
void KeyBlockScores(const float* q, int64_t q_stride, int n_q, const float* lane_scales,
                    const T* block, int64_t dim, float scale, float* out, int64_t out_stride) {
  for (int j = 0; j < n_q; ++j) {
    for (int64_t l = 0; l < kKeyBlock; ++l) {
      float s[4] = {0, 0, 0, 0};
      for (int64_t k = 0; k < dim; ++k) {
        s[k % 4] += q[j * q_stride + k] * ToFloat(block[kKeyBlock * k + l]);
      }
      const float dot = (s[0] + s[1]) + (s[2] + s[3]);
      out[j * out_stride + l] = (lane_scales == nullptr ? dot : dot * lane_scales[l]) * scale;
    }
  }
}

// `src` gives row p (dim values) and, when scaled, its scale: weight w_j[p] · scale(p).
template <typename Source>
void WeightedSum(const float* w, int64_t w_stride, int n_q, const Source& src, int64_t n,
                 int64_t dim, float* out, int64_t out_stride) {
  for (int j = 0; j < n_q; ++j) {
    for (int64_t d = 0; d < dim; ++d) {
      float s[2] = {0, 0};
      for (int64_t p = 0; p < n; ++p) {
        const float weight =
            src.scaled() ? w[j * w_stride + p] * src.Scale(p) : w[j * w_stride + p];
        s[p % 2] += weight * ToFloat(src.Row(p)[d]);
      }
      out[j * out_stride + d] = s[0] + s[1];
    }
  }
}

}  // namespace

void KeyBlockScoresF32(const float* q, int64_t q_stride, int n_q, const float* block, int64_t dim,
                       float scale, float* out, int64_t out_stride) {
  KeyBlockScores(q, q_stride, n_q, nullptr, block, dim, scale, out, out_stride);
}
void KeyBlockScoresF16(const float* q, int64_t q_stride, int n_q, const uint16_t* block,
                       int64_t dim, float scale, float* out, int64_t out_stride) {
  KeyBlockScores(q, q_stride, n_q, nullptr, block, dim, scale, out, out_stride);
}
void KeyBlockScoresI8(const float* q, int64_t q_stride, int n_q, const float* lane_scales,
                      const int8_t* block, int64_t dim, float scale, float* out,
                      int64_t out_stride) {
  KeyBlockScores(q, q_stride, n_q, lane_scales, block, dim, scale, out, out_stride);
}
void WeightedSumF32(const float* w, int64_t w_stride, int n_q, const float* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, ContiguousRows<float>{rows, nullptr, dim}, n, dim, out, out_stride);
}
void WeightedSumF16(const float* w, int64_t w_stride, int n_q, const uint16_t* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, ContiguousRows<uint16_t>{rows, nullptr, dim}, n, dim, out,
              out_stride);
}
void WeightedSumI8(const float* w, int64_t w_stride, int n_q, const float* scales,
                   const int8_t* rows, int64_t n, int64_t dim, float* out, int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, ContiguousRows<int8_t>{rows, scales, dim}, n, dim, out, out_stride);
}
void WeightedSumBlocksF32(const float* w, int64_t w_stride, int n_q, const float* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, BlockRows<float>{blocks, nullptr, dim}, n, dim, out, out_stride);
}
void WeightedSumBlocksF16(const float* w, int64_t w_stride, int n_q, const uint16_t* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, BlockRows<uint16_t>{blocks, nullptr, dim}, n, dim, out, out_stride);
}
void WeightedSumBlocksI8(const float* w, int64_t w_stride, int n_q, const float* const* scales,
                         const int8_t* const* blocks, int64_t n, int64_t dim, float* out,
                         int64_t out_stride) {
  WeightedSum(w, w_stride, n_q, BlockRows<int8_t>{blocks, scales, dim}, n, dim, out, out_stride);
}

void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToFp16(in[i]);
}

}  // namespace reference

#if defined(__x86_64__)
namespace {

#define TANDEM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))

TANDEM_AVX512 inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

// Sixteen elements of each row type as floats (exact conversions); `m` masks a row's tail.
struct F32Row {
  TANDEM_AVX512 static __m512 Load(const float* p, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, p);
  }
};
struct F16Row {
  TANDEM_AVX512 static __m512 Load(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct I8Row {
  TANDEM_AVX512 static __m512 Load(const int8_t* p, __mmask16 m) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
  }
};

// scores[query j][16 positions] = Σ_k q_j[k] · K[k][16 positions]: per k, one load of the
// block's row k for all kQ queries and one broadcast FMA per query into its partial sum
// k mod 4 (4·kQ independent chains keep the FMA units busy); then the scales.
template <int kQ, typename Row, typename T>
TANDEM_AVX512 inline void KeyBlockScoresAvx512(const float* q, int64_t q_stride,
                                               const float* lane_scales, const T* block,
                                               int64_t dim, float scale, float* out,
                                               int64_t out_stride) {
  __m512 s[kQ][4];
#pragma GCC unroll 16
  for (int i = 0; i < 4 * kQ; ++i) s[i / 4][i % 4] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 4 <= dim; k += 4) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512 key = Row::Load(block + kKeyBlock * (k + i), 0xFFFF);
#pragma GCC unroll 4
      for (int j = 0; j < kQ; ++j) {
        s[j][i] = _mm512_fmadd_ps(_mm512_set1_ps(q[j * q_stride + k + i]), key, s[j][i]);
      }
    }
  }
  // The last dim % 4 rows, into partial sums 0, 1, 2. Unrolled, so that every index into s
  // is a constant: a variable one made GCC keep s in memory, storing all 4·kQ partial sums
  // every step of the loop above (5-row verify: twice the FMA time).
#pragma GCC unroll 3
  for (int i = 0; i < 3; ++i) {
    if (k + i >= dim) break;
    const __m512 key = Row::Load(block + kKeyBlock * (k + i), 0xFFFF);
#pragma GCC unroll 4
    for (int j = 0; j < kQ; ++j) {
      s[j][i] = _mm512_fmadd_ps(_mm512_set1_ps(q[j * q_stride + k + i]), key, s[j][i]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < kQ; ++j) {
    __m512 dot = _mm512_add_ps(_mm512_add_ps(s[j][0], s[j][1]), _mm512_add_ps(s[j][2], s[j][3]));
    if (lane_scales != nullptr) dot = _mm512_mul_ps(dot, _mm512_loadu_ps(lane_scales));
    _mm512_storeu_ps(out + j * out_stride, _mm512_mul_ps(dot, _mm512_set1_ps(scale)));
  }
}

template <typename Row, typename T>
TANDEM_AVX512 inline void KeyBlockScoresGroups(const float* q, int64_t q_stride, int n_q,
                                               const float* lane_scales, const T* block,
                                               int64_t dim, float scale, float* out,
                                               int64_t out_stride) {
  for (int j = 0; j < n_q; j += 4) {
    const float* qj = q + j * q_stride;
    float* oj = out + j * out_stride;
    switch (std::min(4, n_q - j)) {
      case 1:
        KeyBlockScoresAvx512<1, Row>(qj, q_stride, lane_scales, block, dim, scale, oj, out_stride);
        break;
      case 2:
        KeyBlockScoresAvx512<2, Row>(qj, q_stride, lane_scales, block, dim, scale, oj, out_stride);
        break;
      case 3:
        KeyBlockScoresAvx512<3, Row>(qj, q_stride, lane_scales, block, dim, scale, oj, out_stride);
        break;
      default:
        KeyBlockScoresAvx512<4, Row>(qj, q_stride, lane_scales, block, dim, scale, oj, out_stride);
        break;
    }
  }
}

// out_j[d] = Σ_p weight_j(p) · rows[p][d] for kQ weight vectors and kChunks chunks of 16
// columns from column d0 (the last maybe partial, `tail` lanes): each row chunk is loaded
// once for all kQ vectors.
template <int kQ, int kChunks, typename Row, typename Source>
TANDEM_AVX512 inline void WeightedChunks(const float* w, int64_t w_stride, const Source& src,
                                         int64_t n, int64_t d0, __mmask16 tail, float* out,
                                         int64_t out_stride) {
  __m512 even[kQ][kChunks], odd[kQ][kChunks];
#pragma GCC unroll 16
  for (int i = 0; i < kQ * kChunks; ++i) {
    even[i / kChunks][i % kChunks] = odd[i / kChunks][i % kChunks] = _mm512_setzero_ps();
  }
  auto mask = [&](int c) { return c == kChunks - 1 ? tail : __mmask16(0xFFFF); };
  // Segment by segment (rows contiguous in memory: all of them, or one block's 16), in pairs;
  // only the last segment can end in a single row.
  for (int64_t s = 0; s < n;) {
    const int64_t m = src.SegmentRows(s, n);
    const auto* rows = src.Row(s) + d0;
    const float* ws = w + s;
    const float* scales = src.scaled() ? src.SegmentScales(s) : nullptr;
    auto weight = [&](int j, int64_t i) {
      return scales != nullptr ? ws[j * w_stride + i] * scales[i] : ws[j * w_stride + i];
    };
    int64_t i = 0;
    for (; i + 2 <= m; i += 2) {
      const auto* r0 = rows + i * src.dim;
      const auto* r1 = r0 + src.dim;
#pragma GCC unroll 4
      for (int c = 0; c < kChunks; ++c) {
        const __m512 v0 = Row::Load(r0 + 16 * c, mask(c)), v1 = Row::Load(r1 + 16 * c, mask(c));
#pragma GCC unroll 4
        for (int j = 0; j < kQ; ++j) {
          even[j][c] = _mm512_fmadd_ps(_mm512_set1_ps(weight(j, i)), v0, even[j][c]);
          odd[j][c] = _mm512_fmadd_ps(_mm512_set1_ps(weight(j, i + 1)), v1, odd[j][c]);
        }
      }
    }
    if (i < m) {
#pragma GCC unroll 4
      for (int c = 0; c < kChunks; ++c) {
        const __m512 v0 = Row::Load(rows + i * src.dim + 16 * c, mask(c));
#pragma GCC unroll 4
        for (int j = 0; j < kQ; ++j) {
          even[j][c] = _mm512_fmadd_ps(_mm512_set1_ps(weight(j, i)), v0, even[j][c]);
        }
      }
    }
    s += m;
  }
#pragma GCC unroll 4
  for (int j = 0; j < kQ; ++j) {
#pragma GCC unroll 4
    for (int c = 0; c < kChunks; ++c) {
      _mm512_mask_storeu_ps(out + j * out_stride + d0 + 16 * c, mask(c),
                            _mm512_add_ps(even[j][c], odd[j][c]));
    }
  }
}

// Passes of up to 64 columns for one to three weight vectors at a time, of 32 columns for four
// (at most 24 accumulators). A pass reads its columns of every row: at 64 columns (a 64-dim f16
// head: both cache lines of a row at once) three queries' value sum of a many-session decode
// step no longer waits for each row's lines twice. SmolLM2-360M shape (3 heads a KV group),
// 16 sessions at 1,000 positions: 54.9 -> 50.0 ms a step; 8 at 2,000: 48.6 -> 43.3 ms. The
// columns' sums are the same whatever the pass width, so the same bits.
template <int kQ, typename Row, typename Source>
TANDEM_AVX512 inline void WeightedSumQueries(const float* w, int64_t w_stride, const Source& src,
                                             int64_t n, int64_t dim, float* out,
                                             int64_t out_stride) {
  constexpr int kMaxChunks = kQ <= 3 ? 4 : 2;
  for (int64_t d0 = 0; d0 < dim; d0 += 16 * kMaxChunks) {
    const int64_t width = std::min<int64_t>(16 * kMaxChunks, dim - d0);
    const int chunks = static_cast<int>((width + 15) / 16);
    const __mmask16 tail = TailMask(width - 16 * (chunks - 1));
    switch (chunks) {
      case 1:
        WeightedChunks<kQ, 1, Row>(w, w_stride, src, n, d0, tail, out, out_stride);
        break;
      case 2:
        WeightedChunks<kQ, 2, Row>(w, w_stride, src, n, d0, tail, out, out_stride);
        break;
      case 3:  // only when kMaxChunks is 4
        WeightedChunks<kQ, 3, Row>(w, w_stride, src, n, d0, tail, out, out_stride);
        break;
      default:
        WeightedChunks<kQ, kMaxChunks, Row>(w, w_stride, src, n, d0, tail, out, out_stride);
        break;
    }
  }
}

template <typename Row, typename Source>
TANDEM_AVX512 inline void WeightedSumAvx512(const float* w, int64_t w_stride, int n_q,
                                            const Source& src, int64_t n, int64_t dim, float* out,
                                            int64_t out_stride) {
  for (int j = 0; j < n_q; j += 4) {
    const float* wj = w + j * w_stride;
    float* oj = out + j * out_stride;
    switch (std::min(4, n_q - j)) {
      case 1:
        WeightedSumQueries<1, Row>(wj, w_stride, src, n, dim, oj, out_stride);
        break;
      case 2:
        WeightedSumQueries<2, Row>(wj, w_stride, src, n, dim, oj, out_stride);
        break;
      case 3:
        WeightedSumQueries<3, Row>(wj, w_stride, src, n, dim, oj, out_stride);
        break;
      default:
        WeightedSumQueries<4, Row>(wj, w_stride, src, n, dim, oj, out_stride);
        break;
    }
  }
}

TANDEM_AVX512 void KeyBlockScoresF32Avx512(const float* q, int64_t q_stride, int n_q,
                                           const float* block, int64_t dim, float scale, float* out,
                                           int64_t out_stride) {
  KeyBlockScoresGroups<F32Row>(q, q_stride, n_q, nullptr, block, dim, scale, out, out_stride);
}
TANDEM_AVX512 void KeyBlockScoresF16Avx512(const float* q, int64_t q_stride, int n_q,
                                           const uint16_t* block, int64_t dim, float scale,
                                           float* out, int64_t out_stride) {
  KeyBlockScoresGroups<F16Row>(q, q_stride, n_q, nullptr, block, dim, scale, out, out_stride);
}
TANDEM_AVX512 void KeyBlockScoresI8Avx512(const float* q, int64_t q_stride, int n_q,
                                          const float* lane_scales, const int8_t* block,
                                          int64_t dim, float scale, float* out,
                                          int64_t out_stride) {
  KeyBlockScoresGroups<I8Row>(q, q_stride, n_q, lane_scales, block, dim, scale, out, out_stride);
}
TANDEM_AVX512 void WeightedSumF32Avx512(const float* w, int64_t w_stride, int n_q,
                                        const float* rows, int64_t n, int64_t dim, float* out,
                                        int64_t out_stride) {
  WeightedSumAvx512<F32Row>(w, w_stride, n_q, ContiguousRows<float>{rows, nullptr, dim}, n, dim,
                            out, out_stride);
}
TANDEM_AVX512 void WeightedSumF16Avx512(const float* w, int64_t w_stride, int n_q,
                                        const uint16_t* rows, int64_t n, int64_t dim, float* out,
                                        int64_t out_stride) {
  WeightedSumAvx512<F16Row>(w, w_stride, n_q, ContiguousRows<uint16_t>{rows, nullptr, dim}, n, dim,
                            out, out_stride);
}
TANDEM_AVX512 void WeightedSumI8Avx512(const float* w, int64_t w_stride, int n_q,
                                       const float* scales, const int8_t* rows, int64_t n,
                                       int64_t dim, float* out, int64_t out_stride) {
  WeightedSumAvx512<I8Row>(w, w_stride, n_q, ContiguousRows<int8_t>{rows, scales, dim}, n, dim, out,
                           out_stride);
}
TANDEM_AVX512 void WeightedSumBlocksF32Avx512(const float* w, int64_t w_stride, int n_q,
                                              const float* const* blocks, int64_t n, int64_t dim,
                                              float* out, int64_t out_stride) {
  WeightedSumAvx512<F32Row>(w, w_stride, n_q, BlockRows<float>{blocks, nullptr, dim}, n, dim, out,
                            out_stride);
}
TANDEM_AVX512 void WeightedSumBlocksF16Avx512(const float* w, int64_t w_stride, int n_q,
                                              const uint16_t* const* blocks, int64_t n, int64_t dim,
                                              float* out, int64_t out_stride) {
  WeightedSumAvx512<F16Row>(w, w_stride, n_q, BlockRows<uint16_t>{blocks, nullptr, dim}, n, dim,
                            out, out_stride);
}
TANDEM_AVX512 void WeightedSumBlocksI8Avx512(const float* w, int64_t w_stride, int n_q,
                                             const float* const* scales,
                                             const int8_t* const* blocks, int64_t n, int64_t dim,
                                             float* out, int64_t out_stride) {
  WeightedSumAvx512<I8Row>(w, w_stride, n_q, BlockRows<int8_t>{blocks, scales, dim}, n, dim, out,
                           out_stride);
}

TANDEM_AVX512 void ConvertF32ToF16Avx512(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, in + i),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(out + i, m, h);
  }
}

// Read once at start-up; __builtin_cpu_init makes the query valid before main.
const bool kHasAvx512 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}();

}  // namespace

#define TANDEM_DISPATCH(name, ...) \
  return kHasAvx512 ? name##Avx512(__VA_ARGS__) : reference::name(__VA_ARGS__)
#else  // portable builds: the references are the implementation.
#define TANDEM_DISPATCH(name, ...) return reference::name(__VA_ARGS__)
#endif

void KeyBlockScoresF32(const float* q, int64_t q_stride, int n_q, const float* block, int64_t dim,
                       float scale, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(KeyBlockScoresF32, q, q_stride, n_q, block, dim, scale, out, out_stride);
}
void KeyBlockScoresF16(const float* q, int64_t q_stride, int n_q, const uint16_t* block,
                       int64_t dim, float scale, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(KeyBlockScoresF16, q, q_stride, n_q, block, dim, scale, out, out_stride);
}
void KeyBlockScoresI8(const float* q, int64_t q_stride, int n_q, const float* lane_scales,
                      const int8_t* block, int64_t dim, float scale, float* out,
                      int64_t out_stride) {
  TANDEM_DISPATCH(KeyBlockScoresI8, q, q_stride, n_q, lane_scales, block, dim, scale, out,
                  out_stride);
}
void WeightedSumF32(const float* w, int64_t w_stride, int n_q, const float* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumF32, w, w_stride, n_q, rows, n, dim, out, out_stride);
}
void WeightedSumF16(const float* w, int64_t w_stride, int n_q, const uint16_t* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumF16, w, w_stride, n_q, rows, n, dim, out, out_stride);
}
void WeightedSumI8(const float* w, int64_t w_stride, int n_q, const float* scales,
                   const int8_t* rows, int64_t n, int64_t dim, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumI8, w, w_stride, n_q, scales, rows, n, dim, out, out_stride);
}
void WeightedSumBlocksF32(const float* w, int64_t w_stride, int n_q, const float* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumBlocksF32, w, w_stride, n_q, blocks, n, dim, out, out_stride);
}
void WeightedSumBlocksF16(const float* w, int64_t w_stride, int n_q, const uint16_t* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumBlocksF16, w, w_stride, n_q, blocks, n, dim, out, out_stride);
}
void WeightedSumBlocksI8(const float* w, int64_t w_stride, int n_q, const float* const* scales,
                         const int8_t* const* blocks, int64_t n, int64_t dim, float* out,
                         int64_t out_stride) {
  TANDEM_DISPATCH(WeightedSumBlocksI8, w, w_stride, n_q, scales, blocks, n, dim, out, out_stride);
}
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  TANDEM_DISPATCH(ConvertF32ToF16, in, out, n);
}
#undef TANDEM_DISPATCH

}  // namespace tandem
