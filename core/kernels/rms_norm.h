// RMSNorm: y = x / sqrt(mean(x²) + eps) * weight, row by row.
#ifndef TANDEM_CORE_KERNELS_RMS_NORM_H_
#define TANDEM_CORE_KERNELS_RMS_NORM_H_

#include <cstdint>

namespace tandem {

// x, y: [n, dim] (may alias); weight: [dim]. The sum of squares runs in float in an order
// fixed by dim (AVX-512: 64 lanes, then one reduction; else element order), so each row's
// result is independent of n and of the other rows.
void RmsNorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y);

// Reference: the same in double.
void RmsNormReference(const float* x, const float* weight, int64_t n, int64_t dim, float eps,
                      float* y);

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_RMS_NORM_H_
