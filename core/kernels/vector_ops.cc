#include "core/kernels/vector_ops.h"

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

float DotF32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float DotF16(const float* a, const uint16_t* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * Fp16ToF32(b[i]);
  return sum;
}

float DotI8(const float* a, const int8_t* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * static_cast<float>(b[i]);
  return sum;
}

void AxpyF32(float w, const float* v, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += w * v[i];
}

void AxpyF16(float w, const uint16_t* v, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += w * Fp16ToF32(v[i]);
}

void AxpyI8(float w, const int8_t* v, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += w * static_cast<float>(v[i]);
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

// Lane j of chunk c (elements 16c..16c+15) accumulates element 16c + j in accumulator c % 2;
// then acc0 + acc1 and one reduction. Two accumulators halve the FMA chain a head-sized dot
// waits on; the order depends only on n. Full chunks load with an all-ones mask (as fast as
// an unmasked load), so only the tail builds a mask.
template <typename Row, typename T>
TANDEM_AVX512 inline float DotAvx512(const float* a, const T* b, int64_t n) {
  const __mmask16 all = 0xFFFF;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), Row::Load(b + i, all), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), Row::Load(b + i + 16, all), acc1);
  }
  if (i < n) {  // an even chunk (full or tail), then maybe an odd tail
    __mmask16 m = TailMask(n - i);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), Row::Load(b + i, m), acc0);
    i += 16;
    if (i < n) {
      m = TailMask(n - i);
      acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), Row::Load(b + i, m), acc1);
    }
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

// out[i] += w · v[i], element by element (no ordering to keep).
template <typename Row, typename T>
TANDEM_AVX512 inline void AxpyAvx512(float w, const T* v, float* out, int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i,
                     _mm512_fmadd_ps(wv, Row::Load(v + i, 0xFFFF), _mm512_loadu_ps(out + i)));
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 sum = _mm512_fmadd_ps(wv, Row::Load(v + i, m), _mm512_maskz_loadu_ps(m, out + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  }
}

TANDEM_AVX512 float DotF32Avx512(const float* a, const float* b, int64_t n) {
  return DotAvx512<F32Row>(a, b, n);
}
TANDEM_AVX512 float DotF16Avx512(const float* a, const uint16_t* b, int64_t n) {
  return DotAvx512<F16Row>(a, b, n);
}
TANDEM_AVX512 float DotI8Avx512(const float* a, const int8_t* b, int64_t n) {
  return DotAvx512<I8Row>(a, b, n);
}
TANDEM_AVX512 void AxpyF32Avx512(float w, const float* v, float* out, int64_t n) {
  AxpyAvx512<F32Row>(w, v, out, n);
}
TANDEM_AVX512 void AxpyF16Avx512(float w, const uint16_t* v, float* out, int64_t n) {
  AxpyAvx512<F16Row>(w, v, out, n);
}
TANDEM_AVX512 void AxpyI8Avx512(float w, const int8_t* v, float* out, int64_t n) {
  AxpyAvx512<I8Row>(w, v, out, n);
}

TANDEM_AVX512 void ConvertF32ToF16Avx512(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, in + i),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(out + i, m, h);
  }
}

// Read once at start-up (these run per cached position, where a function-local static's
// guard check showed in profiles); __builtin_cpu_init makes the query valid before main.
const bool kHasAvx512 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}();
bool HasAvx512() { return kHasAvx512; }

}  // namespace

float DotF32(const float* a, const float* b, int64_t n) {
  return HasAvx512() ? DotF32Avx512(a, b, n) : reference::DotF32(a, b, n);
}
float DotF16(const float* a, const uint16_t* b, int64_t n) {
  return HasAvx512() ? DotF16Avx512(a, b, n) : reference::DotF16(a, b, n);
}
float DotI8(const float* a, const int8_t* b, int64_t n) {
  return HasAvx512() ? DotI8Avx512(a, b, n) : reference::DotI8(a, b, n);
}
void AxpyF32(float w, const float* v, float* out, int64_t n) {
  HasAvx512() ? AxpyF32Avx512(w, v, out, n) : reference::AxpyF32(w, v, out, n);
}
void AxpyF16(float w, const uint16_t* v, float* out, int64_t n) {
  HasAvx512() ? AxpyF16Avx512(w, v, out, n) : reference::AxpyF16(w, v, out, n);
}
void AxpyI8(float w, const int8_t* v, float* out, int64_t n) {
  HasAvx512() ? AxpyI8Avx512(w, v, out, n) : reference::AxpyI8(w, v, out, n);
}
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  HasAvx512() ? ConvertF32ToF16Avx512(in, out, n) : reference::ConvertF32ToF16(in, out, n);
}

#else  // portable builds: the references are the implementation.

float DotF32(const float* a, const float* b, int64_t n) { return reference::DotF32(a, b, n); }
float DotF16(const float* a, const uint16_t* b, int64_t n) { return reference::DotF16(a, b, n); }
float DotI8(const float* a, const int8_t* b, int64_t n) { return reference::DotI8(a, b, n); }
void AxpyF32(float w, const float* v, float* out, int64_t n) { reference::AxpyF32(w, v, out, n); }
void AxpyF16(float w, const uint16_t* v, float* out, int64_t n) {
  reference::AxpyF16(w, v, out, n);
}
void AxpyI8(float w, const int8_t* v, float* out, int64_t n) { reference::AxpyI8(w, v, out, n); }
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  reference::ConvertF32ToF16(in, out, n);
}

#endif

}  // namespace tandem
