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

// Sixteen lanes; lane j of chunk c accumulates element 16c + j; one reduction at the end.
TANDEM_AVX512 float DotF32Avx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

TANDEM_AVX512 float DotF16Avx512(const float* a, const uint16_t* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 bv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, b + i));
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), bv, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

TANDEM_AVX512 float DotI8Avx512(const float* a, const int8_t* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 bv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i)));
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), bv, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

TANDEM_AVX512 void AxpyF32Avx512(float w, const float* v, float* out, int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, v + i),
                                          _mm512_maskz_loadu_ps(m, out + i)));
  }
}

TANDEM_AVX512 void AxpyF16Avx512(float w, const uint16_t* v, float* out, int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 vv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, v + i));
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_fmadd_ps(wv, vv, _mm512_maskz_loadu_ps(m, out + i)));
  }
}

TANDEM_AVX512 void AxpyI8Avx512(float w, const int8_t* v, float* out, int64_t n) {
  const __m512 wv = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 vv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, v + i)));
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_fmadd_ps(wv, vv, _mm512_maskz_loadu_ps(m, out + i)));
  }
}

TANDEM_AVX512 void ConvertF32ToF16Avx512(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, in + i),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(out + i, m, h);
  }
}

bool HasAvx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
}

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
void AxpyF16(float w, const uint16_t* v, float* out, int64_t n) { reference::AxpyF16(w, v, out, n); }
void AxpyI8(float w, const int8_t* v, float* out, int64_t n) { reference::AxpyI8(w, v, out, n); }
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n) {
  reference::ConvertF32ToF16(in, out, n);
}

#endif

}  // namespace tandem
