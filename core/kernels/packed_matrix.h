// A weight matrix repacked at load time into panels of 16 interleaved rows, so that one
// 512-bit vector holds one column of 16 output rows. The panel kernels then compute
//   y[t, 16p .. 16p+15] += W[16p .. 16p+15, c] * x[t, c]
// with one broadcast FMA per (x row, column): no horizontal reductions, and each column is
// loaded and converted to floats once for all the x rows of a tile.
//
// Layout (panel p = rows 16p..16p+15, the last panel padded with zero rows; panels follow
// each other, PanelBytes() apart):
//   Q8_0  per 32-column block: 16 f16 scales d[r], then for each column c of the block the
//         16 int8 quants q[r][c]                                    (32 + 32 * 16 = 544 bytes)
//   Q4_0  per 32-column block: 16 f16 scales d[r], then for each c in 0..15 the 16 bytes of
//         the original blocks' byte c: low nibble = column c, high nibble = column c + 16
//                                                                  (32 + 16 * 16 = 288 bytes)
//   F16, BF16  per column: the 16 rows' values                                   (32 bytes)
// The sizes equal the row layout's, so a packed matrix streams the same number of bytes.
#ifndef TANDEM_CORE_KERNELS_PACKED_MATRIX_H_
#define TANDEM_CORE_KERNELS_PACKED_MATRIX_H_

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "core/kernels/matmul.h"
#include "core/model/tensor_type.h"

namespace tandem {

inline constexpr int64_t kPanelRows = 16;

// Whether `type` has a panel layout (Q8_0, Q4_0, F16, BF16).
bool HasPanelLayout(TensorType type);

// Number of panels of a matrix with `rows` rows.
inline int64_t PanelCount(int64_t rows) { return (rows + kPanelRows - 1) / kPanelRows; }

// Bytes of one panel of `cols` columns (HasPanelLayout(type); cols a multiple of the block).
int64_t PanelBytes(TensorType type, int64_t cols);

// A 64-byte aligned buffer holding a packed matrix.
struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using PackedBuffer = std::unique_ptr<uint8_t[], FreeDeleter>;

// Packs `w` (row layout, `w.data`) into a new buffer of PanelCount(w.rows) * PanelBytes bytes.
// Requires HasPanelLayout(w.type).
PackedBuffer PackMatrix(const WeightMatrix& w);

// Packs `w` when the kernels this CPU runs (DetectKernelIsa) read a panel layout for its type;
// else returns null. The caller keeps the buffer alive and sets w.packed to it.
PackedBuffer PackForThisCpu(const WeightMatrix& w);

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_PACKED_MATRIX_H_
