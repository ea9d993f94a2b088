// Per-ISA row kernels behind MatMul. Each computes, for one weight row and a tile of up to
// kMaxTile x rows, the dot products out[t] = W[row] · x[t]; the arithmetic for x row t never
// depends on the tile size.
#ifndef TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_
#define TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_

#include <cstdint>

#include "core/kernels/matmul.h"
#include "core/model/tensor_type.h"

namespace tandem::internal {

inline constexpr int kMaxTile = 8;

// out[t] = dot(row, x + t * x_stride) for t < tile; `row` holds `cols` elements of `type`.
using DotTileFn = void (*)(TensorType type, const uint8_t* row, const float* x, int64_t x_stride,
                           int tile, int64_t cols, float* out);

void DotTileScalar(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                   int64_t cols, float* out);
void DotTileAvx512(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                   int64_t cols, float* out);
void DotTileAvx2(TensorType type, const uint8_t* row, const float* x, int64_t x_stride, int tile,
                 int64_t cols, float* out);

// DotTileAvx512 for `count` (<= 16) consecutive plain (F32, F16, BF16) rows `row_bytes`
// apart, bit for bit, with the horizontal sums of 16 rows taken together:
// out[t * out_stride + j] = dot(rows + j * row_bytes, x + t * x_stride).
void DotPlainRowsAvx512(TensorType type, const uint8_t* rows, int64_t row_bytes, int count,
                        const float* x, int64_t x_stride, int tile, int64_t cols, float* out,
                        int64_t out_stride);

// Whether the row kernels above read `type` directly (F32, F16, BF16, Q8_0, Q4_0); other
// supported types are first decoded to F32 rows with DecodeRows.
bool DotTileDecodes(TensorType type);
// Rows [begin, end) of `w` as floats, (end - begin) · w.cols of them, by DequantizeRow.
void DecodeRows(const WeightMatrix& w, int64_t begin, int64_t end, float* out);

// Most x rows one tile computes: 12 rows × 2 accumulators plus a block's two columns and
// its scales fit the 32 zmm registers.
inline constexpr int kMaxPanelTile = 12;
// Most x rows one panel kernel call takes (their running sums sit on the stack, 4 KiB).
inline constexpr int kMaxPanelGroup = 64;

// y[t, 16·panel + lane] = W[16·panel + lane, :] · x[t, :] for t < n (1..kMaxPanelGroup) and
// the panel's real lanes, from w.packed; x rows are w.cols apart, y rows w.rows apart.
void PanelGroupAvx512(const WeightMatrix& w, int64_t panel, const float* x, int n, float* y);

// The VNNI path's activations (matmul_panel_vnni.cc): each 32-column block of each x row as
// integer q and a float scale s, x ≈ s · q, with s = max|x| / L and q = x · (L / max|x|)
// rounded to nearest even (all zero for an all-zero block), and the block's Σ q; L is
// ActivationLimit(precision): 32767 (int16) or 127 (int8). q is held as int16 (the int16
// kernels read int8 values as they read int16 ones: the same exact integer sums) unless every
// matrix of the call has int8 panels (then q's memory is not written); in int8 mode also as
// bytes, q8, for the vpdpbusd kernels (null otherwise).
struct Int16Rows {
  const int16_t* q;            // [n, cols]
  const float* scales;         // [n, cols / 32]
  const int32_t* sums;         // [n, cols / 32]
  const int8_t* q8 = nullptr;  // [n, cols] in int8 mode
  // [n, cols / 16] when an int8-panel matrix of a ReadsHalfSums type reads it: Σ q of 16 columns
  const int32_t* half_sums = nullptr;
  // [n, cols / 32]: scales · sums as floats (the K-quant kernels' min terms read it so that
  // their float steps take both of a row's factors from memory, without scalar work)
  const float* scaled_sums = nullptr;
};
// Whether the int8 panels of `type` read Int16Rows::half_sums: Q6_K's and Q3_K's biases (their
// quants are stored unsigned), Q2_K's mins (one per 16 columns).
inline bool ReadsHalfSums(TensorType type) {
  return type == TensorType::kQ6_K || type == TensorType::kQ3_K || type == TensorType::kQ2_K;
}
// Quantizes n rows of `cols` (a multiple of 32) floats into q (unless null: the int8 panels
// never read it), scales and sums as above, and with kInt8 also into q8 and half_sums, each
// when it is not null.
void QuantizeRowsInt16(const float* x, int64_t n, int64_t cols, int16_t* q, float* scales,
                       int32_t* sums, ActivationPrecision precision = ActivationPrecision::kInt16,
                       int8_t* q8 = nullptr, int32_t* half_sums = nullptr);

// x rounded to the grid of `precision`'s activations, s · q as above, for n rows of `cols`
// (a multiple of 32): what the float paths multiply in int8 mode, and the tests' reference.
void RoundToActivationGrid(ActivationPrecision precision, const float* x, int64_t n, int64_t cols,
                           float* out);

// As PanelGroupAvx512 for a Q8_0 or Q4_0 matrix and `panels` (1 or 2) consecutive panels from
// `first_panel`, from quantized activations (their first row the group's first). Two panels
// share each activation load.
void PanelsVnni(const WeightMatrix& w, int64_t first_panel, int panels, const Int16Rows& x, int n,
                float* y);

// The same for a matrix of a packed_kquant.h type (matmul_panel_kquant.cc), and its exact
// equal for AVX-512 CPUs without VNNI (matmul_panel_kquant_avx512.cc).
void PanelsVnniKQuant(const WeightMatrix& w, int64_t first_panel, int panels, const Int16Rows& x,
                      int n, float* y);
void PanelsAvx512KQuant(const WeightMatrix& w, int64_t first_panel, int panels, const Int16Rows& x,
                        int n, float* y);

}  // namespace tandem::internal

#endif  // TANDEM_CORE_KERNELS_MATMUL_INTERNAL_H_
