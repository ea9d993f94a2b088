// Scalar reference dequantisation of the block-quantized ggml types beyond Q8_0 / Q4_0: the
// legacy 32-element types (Q4_1, Q5_0, Q5_1, IQ4_NL) and the 256-element super-block types
// (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS), from ggml's documented block layouts
// (ggml-common.h). Each value is computed with the same float operations in the same order
// as ggml's own dequantisers (scale products first, then the quant), so the results are
// bit-identical to them.
//
// Used by DequantizeRow (tensor_type.h) and by the kernels' generic path. Pure, thread-safe.
#ifndef TANDEM_CORE_MODEL_QUANT_BLOCKS_H_
#define TANDEM_CORE_MODEL_QUANT_BLOCKS_H_

#include <cstdint>

#include "core/model/tensor_type.h"

namespace tandem {

// IQ4_NL's and IQ4_XS's non-linear 4-bit code book (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Decodes `blocks` consecutive blocks of `type` at `src` into blocks · block_size floats at
// `dst`. Returns false (writing nothing) for a type this file does not handle.
bool DequantizeQuantBlocks(TensorType type, const uint8_t* src, int64_t blocks, float* dst);

// Q4_K's and Q5_K's 12 scale bytes hold 8 six-bit scales and 8 six-bit mins; sub-block j's.
void KQuantScaleMin(const uint8_t* scales, int j, int* scale, int* min);
// Q3_K's 12 scale bytes hold 16 six-bit scales (stored biased by 32); sub-block j's, unbiased.
int Q3KScale(const uint8_t* scales, int j);

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_QUANT_BLOCKS_H_
