#include "core/kernels/vector_ops.h"

#include <algorithm>

#include "core/model/tensor_type.h"

// GCC 12's AVX-512 headers initialise vectors as `__Y = __Y`, which -Wuninitialized flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem {
namespace reference {
namespace {

inline float ToFloat(float v) { return v; }
inline float ToFloat(uint16_t v) { return Fp16ToF32(v); }
inline float ToFloat(int8_t v) { return static_cast<float>(v); }

template <typename T>
void KeyBlockScores(const float* q, const T* block, int64_t dim, float* out) {
  for (int64_t l = 0; l < kKeyBlock; ++l) {
    float s[4] = {0, 0, 0, 0};
    for (int64_t k = 0; k < dim; ++k) s[k % 4] += q[k] * ToFloat(block[kKeyBlock * k + l]);
    out[l] = (s[0] + s[1]) + (s[2] + s[3]);
  }
}

// `scales` null: weight w[p]; else w[p] · scales[p].
template <typename T>
void WeightedSum(const float* w, const float* scales, const T* rows, int64_t n, int64_t dim,
                 float* out) {
  for (int64_t d = 0; d < dim; ++d) {
    float s[2] = {0, 0};
    for (int64_t p = 0; p < n; ++p) {
      const float weight = scales == nullptr ? w[p] : w[p] * scales[p];
      s[p % 2] += weight * ToFloat(rows[p * dim + d]);
    }
    out[d] = s[0] + s[1];
  }
}

}  // namespace

void KeyBlockScoresF32(const float* q, const float* block, int64_t dim, float* out) {
  KeyBlockScores(q, block, dim, out);
}
void KeyBlockScoresF16(const float* q, const uint16_t* block, int64_t dim, float* out) {
  KeyBlockScores(q, block, dim, out);
}
void KeyBlockScoresI8(const float* q, const int8_t* block, int64_t dim, float* out) {
  KeyBlockScores(q, block, dim, out);
}
void WeightedSumF32(const float* w, const float* rows, int64_t n, int64_t dim, float* out) {
  WeightedSum(w, nullptr, rows, n, dim, out);
}
void WeightedSumF16(const float* w, const uint16_t* rows, int64_t n, int64_t dim, float* out) {
  WeightedSum(w, nullptr, rows, n, dim, out);
}
void WeightedSumI8(const float* w, const float* scales, const int8_t* rows, int64_t n, int64_t dim,
                   float* out) {
  WeightedSum(w, scales, rows, n, dim, out);
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

// scores[16 positions] = Σ_k q[k] · K[k][16 positions]: one broadcast FMA per k into the
// partial sum k mod 4 (four chains keep the FMA unit busy).
template <typename Row, typename T>
TANDEM_AVX512 inline void KeyBlockScoresAvx512(const float* q, const T* block, int64_t dim,
                                               float* out) {
  __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                 _mm512_setzero_ps()};
  int64_t k = 0;
  for (; k + 4 <= dim; k += 4) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      s[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[k + j]),
                             Row::Load(block + kKeyBlock * (k + j), 0xFFFF), s[j]);
    }
  }
  for (int j = 0; k < dim; ++k, ++j) {
    s[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[k]), Row::Load(block + kKeyBlock * k, 0xFFFF), s[j]);
  }
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3])));
}

// out[d] = Σ_p weight(p) · rows[p][d] for kChunks chunks of 16 columns from column d0 (the
// last maybe partial, `tail` lanes): the rows stream once through all the chunks' sums.
template <int kChunks, typename Row, typename T>
TANDEM_AVX512 inline void WeightedChunks(const float* w, const float* scales, const T* rows,
                                         int64_t n, int64_t dim, int64_t d0, __mmask16 tail,
                                         float* out) {
  __m512 even[kChunks], odd[kChunks];
#pragma GCC unroll 4
  for (int c = 0; c < kChunks; ++c) even[c] = odd[c] = _mm512_setzero_ps();
  auto mask = [&](int c) { return c == kChunks - 1 ? tail : __mmask16(0xFFFF); };
  auto weight = [&](int64_t p) { return scales == nullptr ? w[p] : w[p] * scales[p]; };
  int64_t p = 0;
  for (; p + 2 <= n; p += 2) {
    const __m512 w0 = _mm512_set1_ps(weight(p)), w1 = _mm512_set1_ps(weight(p + 1));
    const T* r0 = rows + p * dim + d0;
    const T* r1 = r0 + dim;
#pragma GCC unroll 4
    for (int c = 0; c < kChunks; ++c) {
      even[c] = _mm512_fmadd_ps(w0, Row::Load(r0 + 16 * c, mask(c)), even[c]);
      odd[c] = _mm512_fmadd_ps(w1, Row::Load(r1 + 16 * c, mask(c)), odd[c]);
    }
  }
  if (p < n) {
    const __m512 w0 = _mm512_set1_ps(weight(p));
#pragma GCC unroll 4
    for (int c = 0; c < kChunks; ++c) {
      even[c] = _mm512_fmadd_ps(w0, Row::Load(rows + p * dim + d0 + 16 * c, mask(c)), even[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < kChunks; ++c) {
    _mm512_mask_storeu_ps(out + d0 + 16 * c, mask(c), _mm512_add_ps(even[c], odd[c]));
  }
}

template <typename Row, typename T>
TANDEM_AVX512 inline void WeightedSumAvx512(const float* w, const float* scales, const T* rows,
                                            int64_t n, int64_t dim, float* out) {
  // Passes of up to four chunks (64 columns: a whole head for most models).
  for (int64_t d0 = 0; d0 < dim; d0 += 64) {
    const int64_t width = std::min<int64_t>(64, dim - d0);
    const int chunks = static_cast<int>((width + 15) / 16);
    const __mmask16 tail = TailMask(width - 16 * (chunks - 1));
    switch (chunks) {
      case 1:
        WeightedChunks<1, Row>(w, scales, rows, n, dim, d0, tail, out);
        break;
      case 2:
        WeightedChunks<2, Row>(w, scales, rows, n, dim, d0, tail, out);
        break;
      case 3:
        WeightedChunks<3, Row>(w, scales, rows, n, dim, d0, tail, out);
        break;
      default:
        WeightedChunks<4, Row>(w, scales, rows, n, dim, d0, tail, out);
        break;
    }
  }
}

TANDEM_AVX512 void KeyBlockScoresF32Avx512(const float* q, const float* block, int64_t dim,
                                           float* out) {
  KeyBlockScoresAvx512<F32Row>(q, block, dim, out);
}
TANDEM_AVX512 void KeyBlockScoresF16Avx512(const float* q, const uint16_t* block, int64_t dim,
                                           float* out) {
  KeyBlockScoresAvx512<F16Row>(q, block, dim, out);
}
TANDEM_AVX512 void KeyBlockScoresI8Avx512(const float* q, const int8_t* block, int64_t dim,
                                          float* out) {
  KeyBlockScoresAvx512<I8Row>(q, block, dim, out);
}
TANDEM_AVX512 void WeightedSumF32Avx512(const float* w, const float* rows, int64_t n, int64_t dim,
                                        float* out) {
  WeightedSumAvx512<F32Row>(w, nullptr, rows, n, dim, out);
}
TANDEM_AVX512 void WeightedSumF16Avx512(const float* w, const uint16_t* rows, int64_t n,
                                        int64_t dim, float* out) {
  WeightedSumAvx512<F16Row>(w, nullptr, rows, n, dim, out);
}
TANDEM_AVX512 void WeightedSumI8Avx512(const float* w, const float* scales, const int8_t* rows,
                                       int64_t n, int64_t dim, float* out) {
  WeightedSumAvx512<I8Row>(w, scales, rows, n, dim, out);
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

void KeyBlockScoresF32(const float* q, const float* block, int64_t dim, float* out) {
  TANDEM_DISPATCH(KeyBlockScoresF32, q, block, dim, out);
}
void KeyBlockScoresF16(const float* q, const uint16_t* block, int64_t dim, float* out) {
  TANDEM_DISPATCH(KeyBlockScoresF16, q, block, dim, out);
}
void KeyBlockScoresI8(const float* q, const int8_t* block, int64_t dim, float* out) {
  TANDEM_DISPATCH(KeyBlockScoresI8, q, block, dim, out);
}
void WeightedSumF32(const float* w, const float* rows, int64_t n, int64_t dim, float* out) {
  TANDEM_DISPATCH(WeightedSumF32, w, rows, n, dim, out);
}
void WeightedSumF16(const float* w, const uint16_t* rows, int64_t n, int64_t dim, float* out) {
  TANDEM_DISPATCH(WeightedSumF16, w, rows, n, dim, out);
}
void WeightedSumI8(const float* w, const float* scales, const int8_t* rows, int64_t n, int64_t dim,
                   float* out) {
  TANDEM_DISPATCH(WeightedSumI8, w, scales, rows, n, dim, out);
}
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  TANDEM_DISPATCH(ConvertF32ToF16, in, out, n);
}
#undef TANDEM_DISPATCH

}  // namespace tandem
