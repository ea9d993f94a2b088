// Per-ISA row kernels behind MatMul. Each computes, for one weight row and a tile of up to
// kMaxTile x rows, the dot products out[t] = W[row] · x[t]; the arithmetic for x row t never
// depends on the tile size.
#ifndef TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_
#define TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_

#include <cstdint>

#include "core/model/tensor_type.h"

namespace tandem::internal {

inline constexpr int kMaxTile = 8;

// out[t] = dot(row, x + t * x_stride) for t < tile; `row` holds `cols` elements of `type`.
using DotTileFn = void (*)(TensorType type, const uint8_t* row, const float* x,
                           int64_t x_stride, int tile, int64_t cols, float* out);

void DotTileScalar(TensorType type, const uint8_t* row, const float* x, int64_t x_stride,
                   int tile, int64_t cols, float* out);
void DotTileAvx512(TensorType type, const uint8_t* row, const float* x, int64_t x_stride,
                   int tile, int64_t cols, float* out);
void DotTileAvx2(TensorType type, const uint8_t* row, const float* x, int64_t x_stride,
                 int tile, int64_t cols, float* out);

}  // namespace tandem::internal

#endif  // TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_
