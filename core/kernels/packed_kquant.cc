#include "core/kernels/packed_kquant.h"

#include <cstring>

#include "core/kernels/packed_matrix.h"

namespace tandem::internal {
namespace {

using T = TensorType;

void OrMaskBit(uint8_t* mask, int bit, bool set) {
  if (set) mask[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 32-element types: one row block into lane r of a panel block. Offsets in the row block
// (and the panel block) of d, m (Q4_1, Q5_1), the u32 of fifth bits (Q5_0, Q5_1) and the 16
// bytes of nibbles.
struct LegacyLayout {
  int m, qh, qs;                     // in the row block; -1: none
  int packed_masks, packed_nibbles;  // in the panel block
};

LegacyLayout LegacyLayoutOf(TensorType type) {
  switch (type) {
    case T::kQ5_0:
      return {-1, 2, 6, 32, 96};
    case T::kQ4_1:
      return {2, -1, 4, -1, 64};
    case T::kQ5_1:
      return {2, 4, 8, 64, 128};
    default:  // IQ4_NL
      return {-1, -1, 2, -1, 32};
  }
}

// The header both layouts share: d at 2r, m (Q4_1, Q5_1) at 32 + 2r.
LegacyLayout PackLegacyHeader(TensorType type, const uint8_t* src, int r, uint8_t* dst) {
  const LegacyLayout l = LegacyLayoutOf(type);
  std::memcpy(dst + 2 * r, src, 2);
  if (l.m >= 0) std::memcpy(dst + 32 + 2 * r, src + l.m, 2);
  return l;
}

void PackLegacy(TensorType type, const uint8_t* src, int r, uint8_t* dst) {
  const LegacyLayout l = PackLegacyHeader(type, src, r, dst);
  const uint32_t qh = l.qh >= 0 ? LoadU32(src + l.qh) : 0;
  for (int s = 0; s < 8; ++s) {
    for (int h = 0; l.qh >= 0 && h < 2; ++h) {
      for (int c = 0; c < 2; ++c) {
        const bool fifth = (qh >> (2 * s + 16 * h + c)) & 1;
        OrMaskBit(dst + l.packed_masks + 4 * (2 * s + h), 2 * r + c,
                  type == T::kQ5_0 ? !fifth : fifth);
      }
    }
    dst[l.packed_nibbles + 32 * s + 2 * r] = src[l.qs + 2 * s];
    dst[l.packed_nibbles + 32 * s + 2 * r + 1] = src[l.qs + 2 * s + 1];
  }
}

// The int8 layout of 16 nibble bytes (column i in the low nibble of byte i, 16 + i in the
// high): quad L of lane r at 64L + 4r holds bytes 4L .. 4L + 3. Fifth bits (bit c of `qh`:
// column c's), when there are any, as a word of lane r at 4r whose byte i, bit 4h + L is
// column 16h + 4L + i's.
void PackNibbleQuadsInt8(const uint8_t* qs, const uint8_t* qh, int r, uint8_t* nibbles,
                         uint8_t* fifth) {
  for (int q = 0; q < 4; ++q) std::memcpy(nibbles + 64 * q + 4 * r, qs + 4 * q, 4);
  if (qh == nullptr) return;
  const uint32_t bits = LoadU32(qh);
  for (int i = 0; i < 4; ++i) {
    int byte = 0;
    for (int k = 0; k < 8; ++k) byte |= ((bits >> (16 * (k / 4) + 4 * (k % 4) + i)) & 1) << k;
    fifth[4 * r + i] = static_cast<uint8_t>(byte);
  }
}

void PackLegacyInt8(TensorType type, const uint8_t* src, int r, uint8_t* dst) {
  const LegacyLayout l = PackLegacyHeader(type, src, r, dst);
  PackNibbleQuadsInt8(src + l.qs, l.qh >= 0 ? src + l.qh : nullptr, r, dst + l.packed_nibbles,
                      dst + l.packed_masks);
}

// IQ4_XS {d, u16 scale highs, u32 scale lows, 8 × 16 nibble bytes}: d at 2r, the u16 at
// 32 + 2r, the u32 at 64 + 4r, then 8 groups of 32 columns as IQ4_NL's nibbles.
void PackIq4XsHeader(const uint8_t* src, int r, uint8_t* dst) {
  std::memcpy(dst + 2 * r, src, 2);
  std::memcpy(dst + 32 + 2 * r, src + 2, 2);
  std::memcpy(dst + 64 + 4 * r, src + 4, 4);
}

void PackIq4Xs(const uint8_t* src, int r, uint8_t* dst) {
  PackIq4XsHeader(src, r, dst);
  for (int g = 0; g < 8; ++g) {
    for (int k = 0; k < 16; ++k)
      dst[128 + 256 * g + 32 * (k / 2) + 2 * r + k % 2] = src[8 + 16 * g + k];
  }
}

void PackIq4XsInt8(const uint8_t* src, int r, uint8_t* dst) {
  PackIq4XsHeader(src, r, dst);
  for (int g = 0; g < 8; ++g) {
    PackNibbleQuadsInt8(src + 8 + 16 * g, nullptr, r, dst + 128 + 256 * g, nullptr);
  }
}

// Q4_K / Q5_K's header in both layouts: d, dmin, the 12 scale bytes as 3 words.
void PackQ45_KHeader(const uint8_t* src, int r, uint8_t* dst) {
  std::memcpy(dst + 2 * r, src, 2);
  std::memcpy(dst + 32 + 2 * r, src + 2, 2);
  for (int w = 0; w < 3; ++w) std::memcpy(dst + 64 + 64 * w + 4 * r, src + 4 + 4 * w, 4);
}

// Q4_K / Q5_K: one row super-block into lane r of a panel super-block.
void PackQ45_K(const uint8_t* src, bool five, int r, uint8_t* dst) {
  PackQ45_KHeader(src, r, dst);
  const uint8_t* qh = src + 16;
  const uint8_t* qs = src + (five ? 48 : 16);
  uint8_t* quants = dst + (five ? 768 : 256);
  for (int g = 0; g < 4; ++g) {
    for (int s = 0; s < 16; ++s) {
      quants[512 * g + 32 * s + 2 * r] = qs[32 * g + 2 * s];
      quants[512 * g + 32 * s + 2 * r + 1] = qs[32 * g + 2 * s + 1];
      if (!five) continue;
      for (int h = 0; h < 2; ++h) {
        for (int c = 0; c < 2; ++c) {
          OrMaskBit(dst + 256 + 4 * ((16 * g + s) * 2 + h), 2 * r + c,
                    (qh[2 * s + c] >> (2 * g + h)) & 1);
        }
      }
    }
  }
}

// Q6_K element e (0..255) of a row super-block as its unsigned 6-bit value.
int Q6Value(const uint8_t* src, int e) {
  const int half = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t low = src[64 * half + l + 32 * (k % 2)];
  const int nibble = k < 2 ? low & 0x0F : low >> 4;
  return nibble | (((src[128 + 32 * half + l] >> (2 * k)) & 3) << 4);
}

void OrU16(uint8_t* p, int value) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  v = static_cast<uint16_t>(v | value);
  std::memcpy(p, &v, 2);
}

// Q6_K's header in both layouts: d, the 16 int8 scales.
void PackQ6_KHeader(const uint8_t* src, int r, uint8_t* dst) {
  std::memcpy(dst + 2 * r, src + 208, 2);
  for (int k = 0; k < 16; ++k) dst[32 + 16 * k + r] = src[192 + k];
}

// Q6_K's group words (packed_kquant.h): vector (h, s), lane 2r + c.
void PackQ6_K(const uint8_t* src, int r, uint8_t* dst) {
  PackQ6_KHeader(src, r, dst);
  for (int g = 0; g < 8; ++g) {
    uint8_t* group = dst + 288 + 384 * g;
    for (int s = 0; s < 8; ++s) {
      for (int h = 0; h < 2; ++h) {
        const int k = 2 * (s % 2) + h, m = 4 * ((s / 2) % 2) + k;
        for (int c = 0; c < 2; ++c) {
          const int q = Q6Value(src, 32 * g + 16 * h + 2 * s + c);
          OrU16(group + 64 * (s / 2) + 2 * (2 * r + c), (q & 0x0F) << (4 * k));
          OrU16(group + 256 + 64 * (s / 4) + 2 * (2 * r + c), ((q >> 4) ^ 2) << (2 * m));
        }
      }
    }
  }
}

// The int8 layouts (packed_kquant.h "int8 panels"): byte quads of 16 rows.
// Q4_K / Q5_K: the header as PackQ45_K's; group g's step s holds bytes 32g + 4s .. + 3 of
// qs. Q5_K's fifth bits: word (g, h) of lane r, byte i, bit s: column 64g + 32h + 4s + i's.
void PackQ45_KInt8(const uint8_t* src, bool five, int r, uint8_t* dst) {
  PackQ45_KHeader(src, r, dst);
  const uint8_t* qh = src + 16;
  const uint8_t* qs = src + (five ? 48 : 16);
  uint8_t* quants = dst + (five ? 768 : 256);
  for (int g = 0; g < 4; ++g) {
    for (int s = 0; s < 8; ++s)
      std::memcpy(quants + 512 * g + 64 * s + 4 * r, qs + 32 * g + 4 * s, 4);
    if (!five) continue;
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 4; ++i) {
        int byte = 0;
        for (int s = 0; s < 8; ++s) byte |= ((qh[4 * s + i] >> (2 * g + h)) & 1) << s;
        dst[256 + 128 * g + 64 * h + 4 * r + i] = static_cast<uint8_t>(byte);
      }
    }
  }
}

// Q6_K: the header as PackQ6_K's; group g (32 columns) as 4 nibble words (word L, byte i of
// lane r: column 4L + i's low 4 bits, column 16 + 4L + i's in the high nibble) and 2 high-bit
// words (word H, byte i, bits 2m..2m + 1: the top 2 bits of column 16H + 4m + i).
void PackQ6_KInt8(const uint8_t* src, int r, uint8_t* dst) {
  PackQ6_KHeader(src, r, dst);
  for (int g = 0; g < 8; ++g) {
    uint8_t* group = dst + 288 + 384 * g;
    for (int i = 0; i < 4; ++i) {
      for (int l = 0; l < 4; ++l) {
        const int a = Q6Value(src, 32 * g + 4 * l + i), b = Q6Value(src, 32 * g + 16 + 4 * l + i);
        group[64 * l + 4 * r + i] = static_cast<uint8_t>((a & 0x0F) | (b & 0x0F) << 4);
      }
      for (int h = 0; h < 2; ++h) {
        int byte = 0;
        for (int m = 0; m < 4; ++m)
          byte |= (Q6Value(src, 32 * g + 16 * h + 4 * m + i) >> 4) << (2 * m);
        group[256 + 64 * h + 4 * r + i] = static_cast<uint8_t>(byte);
      }
    }
  }
}

// Q2_K / Q3_K element e's 2-bit field (quants at `qs`) and Q3_K's high bit (at `hmask`).
int TwoBits(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}
int HighBit(const uint8_t* hmask, int e) {
  return (hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1;
}

// Group-relative column of byte a of pair P: half P / 8, pair P % 8 of the half.
int PairColumn(int pair) { return 16 * (pair / 8) + 2 * (pair % 8); }

// The 2-bit fields of a row super-block as 8 groups × 4 loads × (byte a, byte b) at lane r:
// load L's bit pair i holds pair 4L + i's two columns.
void PackTwoBits(const uint8_t* qs, int r, uint8_t* dst) {
  for (int g = 0; g < 8; ++g) {
    for (int load = 0; load < 4; ++load) {
      for (int b = 0; b < 2; ++b) {
        int byte = 0;
        for (int i = 0; i < 4; ++i) {
          byte |= TwoBits(qs, 32 * g + PairColumn(4 * load + i) + b) << (2 * i);
        }
        dst[128 * g + 32 * load + 2 * r + b] = static_cast<uint8_t>(byte);
      }
    }
  }
}

// Q2_K {16 scale bytes, 64 quant bytes, d, dmin}: d at 2r, dmin at 32 + 2r, scale byte k at
// 64 + 16k + r, the 2-bit fields from 320.
void PackQ2_KHeader(const uint8_t* src, int r, uint8_t* dst) {
  std::memcpy(dst + 2 * r, src + 80, 2);
  std::memcpy(dst + 32 + 2 * r, src + 82, 2);
  for (int k = 0; k < 16; ++k) dst[64 + 16 * k + r] = src[k];
}

void PackQ2_K(const uint8_t* src, int r, uint8_t* dst) {
  PackQ2_KHeader(src, r, dst);
  PackTwoBits(src + 16, r, dst + 320);
}

// Q3_K {32 hmask bytes, 64 quant bytes, 12 scale bytes, d}: d at 2r, the scale words at
// 32 + 64w + 4r, the 2-bit fields from 224, the high bits as masks from 1248.
void PackQ3_KHeader(const uint8_t* src, int r, uint8_t* dst) {
  std::memcpy(dst + 2 * r, src + 108, 2);
  for (int w = 0; w < 3; ++w) std::memcpy(dst + 32 + 64 * w + 4 * r, src + 96 + 4 * w, 4);
}

void PackQ3_K(const uint8_t* src, int r, uint8_t* dst) {
  PackQ3_KHeader(src, r, dst);
  PackTwoBits(src + 32, r, dst + 224);
  for (int g = 0; g < 8; ++g) {
    for (int pair = 0; pair < 16; ++pair) {
      for (int c = 0; c < 2; ++c) {
        OrMaskBit(dst + 1248 + 64 * g + 4 * pair, 2 * r + c,
                  HighBit(src, 32 * g + PairColumn(pair) + c));
      }
    }
  }
}

// The int8 layout of the 2-bit fields: group g, half h at 128g + 64h, lane r's byte i, bits
// 2L, 2L + 1: column 32g + 16h + 4L + i's field.
void PackTwoBitsInt8(const uint8_t* qs, int r, uint8_t* dst) {
  for (int g = 0; g < 8; ++g) {
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 4; ++i) {
        int byte = 0;
        for (int l = 0; l < 4; ++l) byte |= TwoBits(qs, 32 * g + 16 * h + 4 * l + i) << (2 * l);
        dst[128 * g + 64 * h + 4 * r + i] = static_cast<uint8_t>(byte);
      }
    }
  }
}

void PackQ2_KInt8(const uint8_t* src, int r, uint8_t* dst) {
  PackQ2_KHeader(src, r, dst);
  PackTwoBitsInt8(src + 16, r, dst + 320);
}

// Q3_K's high bits: group g at 1248 + 64g, lane r's byte i, bit 4h + L: column 32g + 16h +
// 4L + i's.
void PackQ3_KInt8(const uint8_t* src, int r, uint8_t* dst) {
  PackQ3_KHeader(src, r, dst);
  PackTwoBitsInt8(src + 32, r, dst + 224);
  for (int g = 0; g < 8; ++g) {
    for (int i = 0; i < 4; ++i) {
      int byte = 0;
      for (int k = 0; k < 8; ++k)
        byte |= HighBit(src, 32 * g + 16 * (k / 4) + 4 * (k % 4) + i) << k;
      dst[1248 + 64 * g + 4 * r + i] = static_cast<uint8_t>(byte);
    }
  }
}

}  // namespace

bool IsKQuantPanelType(TensorType type) {
  switch (type) {
    case T::kQ2_K:
    case T::kQ3_K:
    case T::kQ5_0:
    case T::kQ4_1:
    case T::kQ5_1:
    case T::kIQ4_NL:
    case T::kIQ4_XS:
    case T::kQ4_K:
    case T::kQ5_K:
    case T::kQ6_K:
      return true;
    default:
      return false;
  }
}

void PackKQuantPanel(const WeightMatrix& w, int64_t p, uint8_t* matrix) {
  const TensorTypeTraits& traits = GetTraits(w.type);
  const int64_t blocks = w.cols / traits.block_size;
  const int64_t packed_block = traits.bytes_per_block * kPanelRows;
  const int64_t stride = PairPanels(w.rows, p) * packed_block;
  uint8_t* out = matrix + (p - p % 2) * PanelBytes(w.type, w.cols) + (p % 2) * packed_block;
  for (int r = 0; r < kPanelRows; ++r) {
    const int64_t row = p * kPanelRows + r;
    if (row >= w.rows) break;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* src = w.data + row * w.row_bytes + b * traits.bytes_per_block;
      uint8_t* dst = out + b * stride;
      switch (w.type) {
        case T::kQ5_0:
        case T::kQ4_1:
        case T::kQ5_1:
        case T::kIQ4_NL:
          if (w.int8_panels) {
            PackLegacyInt8(w.type, src, r, dst);
          } else {
            PackLegacy(w.type, src, r, dst);
          }
          break;
        case T::kIQ4_XS:
          if (w.int8_panels) {
            PackIq4XsInt8(src, r, dst);
          } else {
            PackIq4Xs(src, r, dst);
          }
          break;
        case T::kQ2_K:
          if (w.int8_panels) {
            PackQ2_KInt8(src, r, dst);
          } else {
            PackQ2_K(src, r, dst);
          }
          break;
        case T::kQ3_K:
          if (w.int8_panels) {
            PackQ3_KInt8(src, r, dst);
          } else {
            PackQ3_K(src, r, dst);
          }
          break;
        case T::kQ4_K:
        case T::kQ5_K:
          if (w.int8_panels) {
            PackQ45_KInt8(src, w.type == T::kQ5_K, r, dst);
          } else {
            PackQ45_K(src, w.type == T::kQ5_K, r, dst);
          }
          break;
        default:
          if (w.int8_panels) {
            PackQ6_KInt8(src, r, dst);
          } else {
            PackQ6_K(src, r, dst);
          }
          break;
      }
    }
  }
}

}  // namespace tandem::internal
