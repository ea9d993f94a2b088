// A portable, scalar emulation of the AVX-512 VNNI panel kernel (matmul_panel_vnni.cc), for
// tests only: the same int16 activation quantization, vpdpwssd's exact int32 arithmetic
// (each 32-bit lane += a0·b0 + a1·b1 of its int16 pairs, wrapping) and the same float steps
// in the same order, so on VNNI hardware the kernel must match it bit for bit, and on any
// CPU the VNNI path's numerics can be checked against the float reference.
//
// Not linked into any binary. Thread-safe (no state).
#ifndef TANDEM_CORE_KERNELS_VNNI_EMULATION_H_
#define TANDEM_CORE_KERNELS_VNNI_EMULATION_H_

#include <cstdint>

#include "core/kernels/matmul.h"

namespace tandem::vnni_emulation {

// One 32-bit lane of vpdpwssd: acc + a0·b0 + a1·b1 with int32 wrap-around (no saturation).
int32_t Vpdpwssd(int32_t acc, int16_t a0, int16_t a1, int16_t b0, int16_t b1);

// As internal::QuantizeRowsInt16: per 32-column block, scale = max|x| / L,
// q = x · (L / max|x|) rounded to nearest even and saturated to int16, sums = Σ q, with
// L = ActivationLimit(precision).
void QuantizeRowsInt16(const float* x, int64_t n, int64_t cols, int16_t* q, float* scales,
                       int32_t* sums, ActivationPrecision precision = ActivationPrecision::kInt16);

// y[t, r] = W[r, :] · x[t, :] for every row r of a packed Q8_0 or Q4_0 matrix (w.packed) and
// t < n, from n float rows of x (w.cols apart; quantized here as above, with
// w.activations); y rows w.rows apart.
void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y);

}  // namespace tandem::vnni_emulation

#endif  // TANDEM_CORE_KERNELS_VNNI_EMULATION_H_
