// Gemma's activations: the GELU-tanh gated unit of its feed-forward block and logit
// soft-capping (attention scores and final logits).
#ifndef TANDEM_CORE_KERNELS_GELU_SOFTCAP_H_
#define TANDEM_CORE_KERNELS_GELU_SOFTCAP_H_

#include <cstdint>

namespace tandem {

// gate[i] = gelu_tanh(gate[i]) * up[i] over n elements, gelu_tanh(g) =
// 0.5·g·(1 + tanh(sqrt(2/π)·(g + 0.044715·g³))), in float.
void GeluTanhGlu(float* gate, const float* up, int64_t n);
void GeluTanhGluReference(float* gate, const float* up, int64_t n);  // in double

// x[i] = cap · tanh(x[i] · (1 / cap)) over n elements (cap > 0), in float.
void Softcap(float* x, int64_t n, float cap);
void SoftcapReference(float* x, int64_t n, float cap);  // in double

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_GELU_SOFTCAP_H_
