// The Q5_0 / Q4_1 / Q5_1 / IQ4_NL / IQ4_XS / Q2_K..Q6_K panel kernel (matmul_panel_kquant.inc)
// for AVX-512 CPUs without VNNI: vpdpwssd's lane arithmetic as vpmaddwd + vpaddd (both wrap,
// neither saturates), so the results equal the VNNI kernel's bit for bit.
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
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma,f16c")
#endif

namespace tandem::internal {
namespace {
// acc + a0·b0 + a1·b1 per 32-bit lane of int16 pairs, wrapping, without VNNI.
inline __m512i Dpwssd(__m512i acc, __m512i a, __m512i b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}
}  // namespace

#define TANDEM_KQ_INT8 0  // the int8 panels are read only on VNNI CPUs
#define TANDEM_KQ_ENTRY PanelsAvx512KQuant
#include "core/kernels/matmul_panel_kquant.inc"
#undef TANDEM_KQ_ENTRY
#undef TANDEM_KQ_INT8

}  // namespace tandem::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64: never selected (AVX-512 is never detected), kept linkable.
namespace tandem::internal {
void PanelsAvx512KQuant(const WeightMatrix&, int64_t, int, const Int16Rows&, int, float*) {}
}  // namespace tandem::internal
#endif
