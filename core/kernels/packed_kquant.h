// Panel layouts (16 interleaved rows, see packed_matrix.h) of the types whose VNNI kernel is
// matmul_panel_kquant.cc: Q5_0, Q4_1, Q5_1, IQ4_NL, IQ4_XS and Q2_K..Q6_K. Each panel
// super-block (32 columns for the legacy types and IQ4_NL, 256 for the others) takes exactly
// the bytes of its 16 rows' blocks, rearranged so that one 32-byte load gives the 16 rows'
// quants of two adjacent columns:
//
//   Q5_0  (352)  [0, 32) 16 f16 d; [32, 96) 16 fifth-bit masks (pair step s = 0..7, half h:
//                mask 2s + h, bit 2r + c = row r's fifth bit of column 2s + 16h + c, inverted:
//                set where the quant is below 16, so that the kernel decodes q - 16 at once);
//                [96, 352) 8 steps × 16 rows × bytes (2s, 2s + 1) of the row's nibbles.
//   Q4_1  (320)  [0, 32) d; [32, 64) m; [64, 320) nibbles as Q5_0's.
//   Q5_1  (384)  [0, 32) d; [32, 64) m; [64, 128) masks as Q5_0's (not inverted); [128, 384)
//                nibbles.
//   IQ4_NL (288) [0, 32) d; [32, 288) nibbles (code book indices) as Q5_0's.
//   IQ4_XS (2176) [0, 32) d; [32, 64) the u16 scale highs; [64, 128) the u32 scale lows;
//                [128, 2176) 8 groups of 32 columns, each as IQ4_NL's nibbles.
//   Q4_K  (2304) [0, 32) d; [32, 64) dmin; [64, 256) the 12 scale bytes as 3 words × 16
//                rows (word w of row r at 64 + 64w + 4r); [256, 2304) 4 groups of 64
//                columns × 16 steps × 16 rows × bytes (32g + 2s, 32g + 2s + 1) of qs.
//   Q5_K  (2816) as Q4_K, with [256, 768) fifth-bit masks (group g, step s, half h: mask
//                (16g + s)·2 + h, bit 2r + c = row r's column 64g + 32h + 2s + c), quants
//                from 768.
//   Q6_K  (3360) [0, 32) d; [32, 288) 16 sub-blocks × 16 rows' int8 scales; from 288, 8
//                groups of 32 columns × 384 bytes: 4 nibble words then 2 high-bit words, a
//                word being 16 rows × 2 columns × u16. Vector (h, s) of a group (16 rows ×
//                columns 16h + 2s + c) is slot k = 2 (s % 2) + h of nibble word s / 2 (bits
//                4k..4k + 3: the quant's low 4 bits) and slot 4 ((s / 2) % 2) + k of high word
//                s / 4 (bits 2m, 2m + 1: its top 2 bits XOR 2, so that the 6 bits read as a
//                two's complement number are q - 32).
//   Q2_K  (1344) [0, 32) d; [32, 64) dmin; [64, 320) 16 sub-blocks × 16 rows' scale bytes;
//                [320, 1344) the 2-bit fields: 8 groups of 32 columns × 4 loads × 16 rows ×
//                2 bytes, load L's bit pair i holding column pair P = 4L + i (columns
//                16 (P / 8) + 2 (P % 8) in byte a, the next in byte b).
//   Q3_K  (1760) [0, 32) d; [32, 224) the 12 scale bytes as 3 words × 16 rows; [224, 1248)
//                the 2-bit fields as Q2_K's; [1248, 1760) the high bits as masks (group g,
//                pair P: 1248 + 64g + 4P, bit 2r + c).
//
// Panels go in pairs (0 and 1, 2 and 3, ...; a last odd panel alone), the kernel's unit of
// work: a pair's super-blocks alternate, super-block b of panel p at
//   PanelBytes · (p - p % 2) + (b · PairPanels + p % 2) · super-block bytes,
// so that the kernel reads a pair as one sequential stream.
//
// Int8 panels (UsesInt8Panels, packed_matrix.h; w.int8_panels), for the vpdpbusd kernel: the
// same sizes, pairs and headers, the quants as byte quads of 16 rows (a 32-bit lane per row):
//   Q4_K  [256, 2304) 4 groups of 64 columns × 8 steps × 16 rows × bytes 32g + 4s .. + 3 of
//         qs (low nibbles: columns 64g + 4s + i, high: 64g + 32 + 4s + i).
//   Q5_K  [256, 768) the fifth bits: 4 groups × 2 halves × 16 rows × 4 bytes (group g, half h,
//         byte i, bit s: column 64g + 32h + 4s + i's); from 768 the nibbles as Q4_K's.
//   Q6_K  from 288, 8 groups of 32 columns × 384 bytes: 4 nibble words (word L, byte i of a
//         row: column 4L + i's low 4 bits, column 16 + 4L + i's as the high nibble), then 2
//         high-bit words (word H, byte i, bits 2m, 2m + 1: column 16H + 4m + i's top 2 bits);
//         the quants unsigned (0..63; the kernel takes 32 · Σ x out).
//   Q5_0, Q4_1, Q5_1, IQ4_NL (and each of IQ4_XS's 8 groups, from 128 + 256g): the nibbles as 4
//         quads (quad L, byte i of a row: column 4L + i low, 16 + 4L + i high); the fifth bits
//         (at Q5_0's 32, Q5_1's 64) as one word per row, byte i bit 4h + L: column 16h + 4L +
//         i's. Unsigned: Q5_0's q (16 · Σ x out), IQ4's code book + 128 (128 · Σ x out).
//   Q2_K, Q3_K  the 2-bit fields (from 320, 224): group g, half h at 128g + 64h, byte i of a
//         row, bits 2L, 2L + 1: column 32g + 16h + 4L + i's; Q3_K's high bits at 1248 + 64g,
//         byte i, bit 4h + L (Q3_K unsigned, 0..7: 4 · Σ x of the half out).
//
// The dequantized values are exactly those of DequantizeRow (tensor_type.h).
#ifndef TANDEM_CORE_KERNELS_PACKED_KQUANT_H_
#define TANDEM_CORE_KERNELS_PACKED_KQUANT_H_

#include <cstdint>

#include "core/kernels/matmul.h"
#include "core/model/tensor_type.h"

namespace tandem::internal {

// Whether `type` is one of the layouts above.
bool IsKQuantPanelType(TensorType type);

// Panels in the pair of panel p of a matrix of `rows` rows: 2, or 1 for a last odd panel.
inline int64_t PairPanels(int64_t rows, int64_t p) {
  const int64_t panels = (rows + 15) / 16;
  return panels - (p - p % 2) >= 2 ? 2 : 1;
}

// Packs panel `p` of `w` (one of the types above) into its place in `matrix`, the whole
// packed matrix, which the caller zeroed (padding rows stay zero: scales 0, so they
// contribute exact zeros).
void PackKQuantPanel(const WeightMatrix& w, int64_t p, uint8_t* matrix);

}  // namespace tandem::internal

#endif  // TANDEM_CORE_KERNELS_PACKED_KQUANT_H_
