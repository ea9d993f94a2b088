#include "core/kernels/gelu_softcap.h"

#include <cmath>

namespace tandem {
namespace {

constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
constexpr float kGeluCoefA = 0.044715f;

}  // namespace

void GeluTanhGlu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float gelu =
        0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * g * (1.0f + kGeluCoefA * g * g)));
    gate[i] = gelu * up[i];
  }
}

void GeluTanhGluReference(float* gate, const float* up, int64_t n) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    const double gelu = 0.5 * g * (1.0 + std::tanh(sqrt_2_over_pi * (g + 0.044715 * g * g * g)));
    gate[i] = static_cast<float>(gelu * up[i]);
  }
}

void Softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void SoftcapReference(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(cap * std::tanh(double{x[i]} / cap));
}

}  // namespace tandem
