// Element-wise and per-row kernels: softmax, SwiGLU and the residual add.
#ifndef TANDEM_CORE_KERNELS_ACTIVATIONS_H_
#define TANDEM_CORE_KERNELS_ACTIVATIONS_H_

#include <cstdint>

namespace tandem {

// In place over x[n]: x = exp(x - max) / sum. The sum runs in element order.
void Softmax(float* x, int64_t n);
void SoftmaxReference(float* x, int64_t n);

// gate[i] = silu(gate[i]) * up[i] over n elements; silu(g) = g / (1 + exp(-g)).
void SwiGlu(float* gate, const float* up, int64_t n);
void SwiGluReference(float* gate, const float* up, int64_t n);

// x[i] += y[i] over n elements (one float add each: the same bits on every path).
void AddInPlace(float* x, const float* y, int64_t n);

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_ACTIVATIONS_H_
