#include "core/kernels/rope.h"

#include <cmath>

#include "core/kernels/avx512_support.h"

namespace tandem {

RopeTable::RopeTable(int64_t rot_dim, float base, float scale, int64_t max_positions,
                     const std::vector<float>& freq_factors)
    : rot_dim_(rot_dim),
      max_positions_(max_positions),
      cos_(max_positions * (rot_dim / 2)),
      sin_(max_positions * (rot_dim / 2)) {
  const int64_t pairs = rot_dim / 2;
  for (int64_t p = 0; p < max_positions; ++p) {
    for (int64_t i = 0; i < pairs; ++i) {
      // Angles in double so long contexts keep their precision; stored as float.
      const double factor = freq_factors.empty() ? 1.0 : double{freq_factors[i]};
      const double theta = std::pow(double{base}, -2.0 * i / rot_dim) / scale / factor;
      const double angle = p * theta;
      cos_[p * pairs + i] = static_cast<float>(std::cos(angle));
      sin_[p * pairs + i] = static_cast<float>(std::sin(angle));
    }
  }
}

namespace {

// Element indices of pair i in a head.
inline void PairIndices(RopeLayout layout, int64_t rot_dim, int64_t i, int64_t* a, int64_t* b) {
  if (layout == RopeLayout::kInterleaved) {
    *a = 2 * i;
    *b = 2 * i + 1;
  } else {
    *a = i;
    *b = i + rot_dim / 2;
  }
}

#if defined(__x86_64__)
#define TANDEM_AVX512 __attribute__((target("avx512f")))

// x · y rounded to float on its own: the empty asm keeps GCC (which contracts across
// statements in C++ even with -std=c++17) from fusing the product into a following add.
TANDEM_AVX512 inline __m512 Product(__m512 x, __m512 y) {
  __m512 p = _mm512_mul_ps(x, y);
  asm("" : "+v"(p));
  return p;
}

// Interleaved pairs, 8 a vector: lane 2j holds x0 of pair j, lane 2j + 1 its x1. With c and
// s each pair's cos and sin in both of its lanes and x' = x with each pair's lanes swapped,
//   x · c + x' · (-s, s, ...)  =  (x0 c - x1 s, x1 c + x0 s)
// the scalar loop's products and sums, each rounded once (x1 c + x0 s = x0 s + x1 c exactly).
TANDEM_AVX512 void RopeInterleavedAvx512(const float* cos, const float* sin, int64_t rot_dim,
                                         float* head) {
  const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (int64_t e = 0; e < rot_dim; e += 16) {  // elements e .. e + 15: pairs e/2 .. e/2 + 7
    const int64_t left = rot_dim - e;
    const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 pm = left >= 16 ? __mmask16(0xFF) : __mmask16((1u << (left / 2)) - 1);
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(pm, cos + e / 2));
    const __m512 s = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(pm, sin + e / 2));
    const __m512 signed_s = _mm512_mask_sub_ps(s, 0x5555, _mm512_setzero_ps(), s);
    const __m512 x = _mm512_maskz_loadu_ps(m, head + e);
    const __m512 swapped = _mm512_permute_ps(x, 0xB1);  // (x1, x0) of each pair
    _mm512_mask_storeu_ps(head + e, m, _mm512_add_ps(Product(x, c), Product(swapped, signed_s)));
  }
}

// Half-split pairs (i, i + rot_dim / 2), 16 a vector: the scalar loop's arithmetic lane-wise.
TANDEM_AVX512 void RopeHalfAvx512(const float* cos, const float* sin, int64_t rot_dim,
                                  float* head) {
  const int64_t pairs = rot_dim / 2;
  for (int64_t i = 0; i < pairs; i += 16) {
    const __mmask16 m = pairs - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (pairs - i)) - 1);
    const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, head + i);
    const __m512 x1 = _mm512_maskz_loadu_ps(m, head + pairs + i);
    _mm512_mask_storeu_ps(head + i, m, _mm512_sub_ps(Product(x0, c), Product(x1, s)));
    _mm512_mask_storeu_ps(head + pairs + i, m, _mm512_add_ps(Product(x0, s), Product(x1, c)));
  }
}
#endif

}  // namespace

void ApplyRope(const RopeTable& table, RopeLayout layout, int64_t position, int64_t n_heads,
               int64_t head_dim, float* x) {
  const int64_t rot_dim = table.rot_dim();
  const float* cos = table.cos(position);
  const float* sin = table.sin(position);
#if defined(__x86_64__)
  if (internal::HasAvx512F()) {
    for (int64_t h = 0; h < n_heads; ++h) {
      if (layout == RopeLayout::kInterleaved) {
        RopeInterleavedAvx512(cos, sin, rot_dim, x + h * head_dim);
      } else {
        RopeHalfAvx512(cos, sin, rot_dim, x + h * head_dim);
      }
    }
    return;
  }
#endif
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      int64_t a, b;
      PairIndices(layout, rot_dim, i, &a, &b);
      const float x0 = head[a], x1 = head[b];
      head[a] = x0 * cos[i] - x1 * sin[i];
      head[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

void ApplyRopeReference(int64_t rot_dim, float base, float scale, RopeLayout layout,
                        int64_t position, int64_t n_heads, int64_t head_dim, float* x,
                        const float* freq_factors) {
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      const double factor = freq_factors == nullptr ? 1.0 : double{freq_factors[i]};
      const double angle = position * std::pow(double{base}, -2.0 * i / rot_dim) / scale / factor;
      int64_t a, b;
      PairIndices(layout, rot_dim, i, &a, &b);
      const double x0 = head[a], x1 = head[b];
      head[a] = static_cast<float>(x0 * std::cos(angle) - x1 * std::sin(angle));
      head[b] = static_cast<float>(x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
}

}  // namespace tandem
