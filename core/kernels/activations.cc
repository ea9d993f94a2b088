#include "core/kernels/activations.h"

#include <cmath>

#include "core/kernels/avx512_support.h"

namespace tandem {
namespace {

#if defined(__x86_64__)
#define TANDEM_AVX512 __attribute__((target("avx512f,fma")))

// exp(x) for 16 floats, within ~2 ulp of std::exp (Cephes' expf): x = k·ln2 + r with
// |r| <= ln2/2 (ln2 split in two so k·ln2 is exact for |k| < 2^9), a degree-6 polynomial for
// exp(r), then ·2^k by vscalefps (exact scaling, subnormals included). Inputs are clamped
// to ±88.5 (exp(88.72) overflows float) so that reducing a huge |x| cannot give NaN; a
// SwiGLU input g < -88.5 then gets g / e^88.5 instead of ~0, an error below 4e-39·|g|.
TANDEM_AVX512 inline __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.5f)), _mm512_set1_ps(88.5f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, k);
}

// Every element, the tail too (masked), goes through the same vector code, so an element's
// result does not depend on its position or on n.
TANDEM_AVX512 void SwiGluAvx512(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 exp_minus_g = Exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp_minus_g));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

TANDEM_AVX512 void AddInPlaceAvx512(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        x + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// Softmax with lane j summing elements 16c + j, then one fixed reduction: the result depends
// only on x and n.
TANDEM_AVX512 void SoftmaxAvx512(float* x, int64_t n) {
  __m512 max = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    max = _mm512_mask_max_ps(max, m, max, _mm512_maskz_loadu_ps(m, x + i));
  }
  const __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(max));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 e =
        _mm512_maskz_mov_ps(m, Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), top)));
    sum = _mm512_add_ps(sum, e);  // masked lanes add 0
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
  }
}

#endif

}  // namespace

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
#if defined(__x86_64__)
  if (internal::HasAvx512F()) return SoftmaxAvx512(x, n);
#endif
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);  // <= 1: no overflow
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void SoftmaxReference(float* x, int64_t n) {
  if (n <= 0) return;
  double max = x[0];
  for (int64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::exp(x[i] - max) / sum);
}

void SwiGlu(float* gate, const float* up, int64_t n) {
#if defined(__x86_64__)
  if (internal::HasAvx512F()) return SwiGluAvx512(gate, up, n);
#endif
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void AddInPlace(float* x, const float* y, int64_t n) {
#if defined(__x86_64__)
  if (internal::HasAvx512F()) return AddInPlaceAvx512(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void SwiGluReference(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    gate[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace tandem
