#include "core/kernels/rms_norm.h"

#include <cmath>

namespace tandem {

void RmsNorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x + i * dim;
    float* yi = y + i * dim;
    float sum = 0.0f;
    for (int64_t c = 0; c < dim; ++c) sum += xi[c] * xi[c];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int64_t c = 0; c < dim; ++c) yi[c] = xi[c] * inv * weight[c];
  }
}

void RmsNormReference(const float* x, const float* weight, int64_t n, int64_t dim, float eps,
                      float* y) {
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int64_t c = 0; c < dim; ++c) sum += double{x[i * dim + c]} * x[i * dim + c];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(dim) + eps);
    for (int64_t c = 0; c < dim; ++c) {
      y[i * dim + c] = static_cast<float>(x[i * dim + c] * inv * weight[c]);
    }
  }
}

}  // namespace tandem
