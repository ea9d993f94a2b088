// The AVX-512 VNNI kernel for Q5_0, Q4_K, Q5_K and Q6_K panels (packed_kquant.h), on the
// int16 activations of the Q8_0 / Q4_0 kernel (matmul_panel_vnni.cc: x ≈ s · xq per
// 32-column block, with the block's Σ xq). Per group of columns and x row t:
//   A[t, r], B[t, r] = Σ q[r, c] · xq[t, c] over the group's two halves   exact, int32
// then, per row lane r, once per group:
//   Q5_0        y += float(A + B) · (d · s)        (q = 5-bit value - 16, decoded so: -16..15)
//   Q4_K, Q5_K  y += float(A) · (d·sc_a · s_a) - dmin·m_a · (s_a Σxq_a), the same for B
//               (halves = the 32-column sub-blocks 2g, 2g + 1, each its own x block)
//   Q6_K        y += (float(A) · d·sc_a + float(B) · d·sc_b) · s   (q - 32 in -32..31;
//               halves = the 16-column sub-blocks of one x block)
// Batch invariance: the integer sums are exact and the float steps per (x row, group) are
// fixed, so y[t, r] does not depend on n, the tiling, the pairing of panels or the thread.
// Cost of a t-row tile (the 2-core Zen 4 measured, single-thread loops): vpdpwssd zmm issues
// once per cycle (as does FMA), so 16 rows × 2 columns cost t cycles of multiplies whatever
// the type; decoding (vpsllw/vpsraw on two pipes, kmovd from memory ~0.5 cycle each) and
// the per-group float steps come on top. L2-resident, one 5-row pass of a 2560 × 960 Q5_0
// matrix was ~1.4 cycles per vpdpwssd (Q4_K similar, Q6_K ~2.2), against ~3 per 16 × 2
// weights for one row: the batch-5 cost of a Q5_0-heavy file is bounded by these multiplies
// (int8 activations would halve them but move the fixtures' logits by ~0.1, README there).
// On Zen 5 (family 1Ah) vpdpwssd zmm issues twice a cycle (latency 4) on the two pipes that
// also run vmulps / vfmadd, while shifts, vpternlogd, vcvtdq2ps and broadcast loads run
// beside them: a 5-row tile's floor is 40 cycles a 16 × 32 panel block of multiplies plus
// its float steps' products (tandem-kernel-bench, L2-resident: Q5_0 ~15.5 ns ≈ 50 cycles,
// Q4_K ~18, Q6_K ~21). Streamed from memory by both cores a 5-row pass took ~1.5× its
// one-row pass with the near prefetch alone, ~1.3× with the far one of multi-row tiles
// (matmul_panel_kquant_decode.inc): the multiplies and the stream still overlap only in part.
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
// acc + a0·b0 + a1·b1 per 32-bit lane of int16 pairs, wrapping: vpdpwssd, written as an
// instruction that updates acc in place. Through the intrinsic GCC 12 gives a loop-carried
// accumulator a fresh register each step and copies it back (two moves per vpdpwssd in the
// not fully unrolled step loops): where vpdpwssd issues twice a cycle (Zen 5) the copies,
// not the multiplies, set the pace (L2-resident 5-row Q4_K pass 24.7 -> 20.8 ns a panel
// block, Q5_0 19.1 -> 17.9).
inline __m512i Dpwssd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  return acc;
}
#include "core/kernels/int8_dot.inc"  // the int8 panels' steps
}  // namespace

#define TANDEM_KQ_INT8 1
#define TANDEM_KQ_ENTRY PanelsVnniKQuant
#include "core/kernels/matmul_panel_kquant.inc"
#undef TANDEM_KQ_ENTRY
#undef TANDEM_KQ_INT8

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
