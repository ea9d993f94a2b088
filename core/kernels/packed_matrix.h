// A weight matrix repacked at load time into panels of 16 interleaved rows, so that one
// 512-bit vector holds one column of 16 output rows. The panel kernels then compute
//   y[t, 16p .. 16p+15] += W[16p .. 16p+15, c] * x[t, c]
// with one broadcast FMA per (x row, column): no horizontal reductions, and each column is
// loaded and converted to floats once for all the x rows of a tile.
//
// Layout (panel p = rows 16p..16p+15, the last panel padded with zero rows; panels follow
// each other, PanelBytes() apart):
//   Q8_0  per 32-column block: 16 f16 scales d[r], then for each column pair j of the block
//         the 16 rows' pairs q[r][2j], q[r][2j + 1] (a 32-bit lane per row once widened to
//         int16, the operand layout of AVX-512 VNNI's vpdpwssd)      (32 + 32 * 16 = 544 bytes)
//   Q4_0  per 32-column block: 16 f16 scales d[r], then for each byte pair j in 0..7 the 16
//         rows' bytes 2j, 2j + 1 of the original block (byte k: low nibble = column k, high
//         nibble = column k + 16)                                  (32 + 16 * 16 = 288 bytes)
//   F16, BF16  per column: the 16 rows' values                                   (32 bytes)
//   Q5_0, Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q4_K, Q5_K, Q6_K  see packed_kquant.h (AVX-512 only)
// The sizes equal the row layout's, so a packed matrix streams the same number of bytes.
#ifndef TANDEM_CORE_KERNELS_PACKED_MATRIX_H_
#define TANDEM_CORE_KERNELS_PACKED_MATRIX_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/kernels/matmul.h"
#include "core/model/tensor_type.h"

namespace tandem {

inline constexpr int64_t kPanelRows = 16;

// Whether `type` has a panel layout (Q8_0, Q4_0, F16, BF16 and packed_kquant.h's types).
bool HasPanelLayout(TensorType type);

// Number of panels of a matrix with `rows` rows.
inline int64_t PanelCount(int64_t rows) { return (rows + kPanelRows - 1) / kPanelRows; }

// Bytes of one panel of `cols` columns (HasPanelLayout(type); cols a multiple of the block).
int64_t PanelBytes(TensorType type, int64_t cols);

// Bytes of `w` packed: PanelCount(w.rows) panels of PanelBytes (HasPanelLayout(w.type)).
int64_t PackedBytes(const WeightMatrix& w);

// Writes `w` (row layout, `w.data`) packed into out[0, PackedBytes(w)); padding rows become
// zeros. Requires HasPanelLayout(w.type).
void PackMatrix(const WeightMatrix& w, uint8_t* out);

// Whether the kernels this CPU runs (DetectKernelIsa) read a panel layout for `type`.
bool PacksOnThisCpu(TensorType type);

// Whether `w` is packed in the int8 layout (w.int8_panels) on this CPU: in int8 mode
// (w.activations) on AVX-512 VNNI, for every quantized type (each has a vpdpbusd kernel).
// The int8 layout of
//   Q8_0  per 32-column block: 16 f16 scales, then for each column quad j the 16 rows'
//         quants 4j..4j + 3 plus 128 (unsigned: vpdpbusd's unsigned operand)   (544 bytes)
//   Q4_0  per 32-column block: 16 f16 scales, then for each byte quad j in 0..3 the 16 rows'
//         bytes 4j..4j + 3 of the original block (nibbles as stored)          (288 bytes)
// so one 64-byte load holds 4 columns (Q4_0: 4 + 4) of 16 rows, a 32-bit lane per row; the
// other types' in packed_kquant.h.
bool UsesInt8Panels(const WeightMatrix& w);

// Memory for packed matrices: one anonymous mapping starting on a 2 MiB boundary, asking for
// transparent huge pages. Decode streams every weight once per token, and through 4 KiB pages
// that costs a TLB miss (a nested page walk in a VM) every 4 KiB: measured 2-3x slower than the
// mapped file, whose page cache already sits in huge folios. Move-only; unmaps on destruction.
class PackedArena {
 public:
  // kResourceExhausted if the mapping fails.
  static absl::StatusOr<PackedArena> Create(int64_t bytes);
  PackedArena() = default;
  PackedArena(PackedArena&& other) noexcept;
  PackedArena& operator=(PackedArena&& other) noexcept;
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;
  ~PackedArena();

  uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_PACKED_MATRIX_H_
