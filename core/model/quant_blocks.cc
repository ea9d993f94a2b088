#include "core/model/quant_blocks.h"

#include <cstring>

namespace tandem {
namespace {

using T = TensorType;

float Half(const uint8_t* p) { return Fp16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Q4_1 {f16 d, f16 m, 16 bytes of nibbles}: element k = nibble · d + m, low nibbles first.
void Q4_1(const uint8_t* b, float* y) {
  const float d = Half(b), m = Half(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b[4 + j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
  }
}

// Q5_0 {f16 d, u32 high bits, 16 bytes of nibbles}: bit j of the u32 is element j's fifth bit
// (element j + 16's is bit j + 16); element = (5-bit value - 16) · d.
void Q5_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const uint32_t qh = LoadU32(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[6 + j] & 0x0F) | (((qh >> j) & 1) << 4);
    const int hi = (b[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

// Q5_1 {f16 d, f16 m, u32 high bits, 16 bytes of nibbles}: element = 5-bit value · d + m.
void Q5_1(const uint8_t* b, float* y) {
  const float d = Half(b), m = Half(b + 2);
  const uint32_t qh = LoadU32(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[8 + j] & 0x0F) | (((qh >> j) & 1) << 4);
    const int hi = (b[8 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

// IQ4_NL {f16 d, 16 bytes of nibbles}: element = d · code_book[nibble], low nibbles first.
void Iq4Nl(const uint8_t* b, float* y) {
  const float d = Half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4NlValues[b[2 + j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4NlValues[b[2 + j] >> 4]);
  }
}

// Q2_K {16 scale bytes (low nibble scale, high nibble min, per 16 elements), 64 bytes of 2-bit
// quants, f16 d, f16 dmin}. Each 128-element half reads 32 quant bytes four times (shifts
// 0, 2, 4, 6), each time as two 16-element sub-blocks.
void Q2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = Half(b + 80), dmin = Half(b + 82);
  int is = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part, ++is) {
        const float dl = d * static_cast<float>(scales[is] & 0x0F);
        const float ml = dmin * static_cast<float>(scales[is] >> 4);
        for (int l = 0; l < 16; ++l) {
          *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// Q3_K {32 bytes of high bits, 64 bytes of 2-bit quants, 12 scale bytes, f16 d}: as Q2_K's
// walk; the high bit of element l of pass k (0..7) is bit k of hmask[l], and a clear bit
// subtracts 4; each 16-element sub-block has a signed six-bit scale.
void Q3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  const uint8_t* scales = b + 96;
  const float d = Half(b + 108);
  int is = 0;
  int bit = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, ++bit) {
      for (int part = 0; part < 2; ++part, ++is) {
        const float dl = d * static_cast<float>(Q3KScale(scales, is));
        for (int l = 0; l < 16; ++l) {
          const int k = 16 * part + l;
          const int value = ((q[k] >> shift) & 3) - ((hmask[k] >> bit) & 1 ? 0 : 4);
          *y++ = dl * static_cast<float>(value);
        }
      }
    }
  }
}

// Q4_K {f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles}: each 64 elements read 32
// bytes, low nibbles (sub-block 2i) then high nibbles (2i + 1); element = d·sc·q - dmin·m.
// Q5_K adds 32 bytes of fifth bits before the nibbles: bit 2i / 2i + 1 of byte l.
void Q45_K(const uint8_t* b, bool five, float* y) {
  const float d = Half(b), dmin = Half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + (five ? 48 : 16);
  for (int i = 0; i < 4; ++i, q += 32) {
    for (int part = 0; part < 2; ++part) {
      int sc, m;
      KQuantScaleMin(scales, 2 * i + part, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        int value = part == 0 ? q[l] & 0x0F : q[l] >> 4;
        if (five && ((qh[l] >> (2 * i + part)) & 1)) value += 16;
        *y++ = dl * static_cast<float>(value) - ml;
      }
    }
  }
}

// Q6_K {128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8 scales, f16 d}: each
// 128-element half reads 64 low bytes and 32 high bytes; element l + 32k (k = 0..3) takes
// the low (k < 2) or high nibble of ql[l + 32 (k % 2)] and bits 2k of qh[l], minus 32; a
// scale per 16 elements.
void Q6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = Half(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int l = 0; l < 32; ++l) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t low = ql[l + 32 * (k % 2)];
        const int nibble = k < 2 ? low & 0x0F : low >> 4;
        const int value = (nibble | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
        y[l + 32 * k] = d * static_cast<float>(sc[l / 16 + 2 * k]) * static_cast<float>(value);
      }
    }
  }
}

// IQ4_XS {f16 d, u16 scale high bits, 4 bytes of scale low nibbles, 128 bytes of nibbles}:
// eight IQ4_NL-like 32-element sub-blocks, each with a six-bit scale biased by 32.
void Iq4Xs(const uint8_t* b, float* y) {
  const float d = Half(b);
  const int scales_h = b[2] | (b[3] << 8);
  const uint8_t* scales_l = b + 4;
  const uint8_t* q = b + 8;
  for (int ib = 0; ib < 8; ++ib, q += 16, y += 32) {
    const int ls =
        ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4NlValues[q[j] & 0x0F]);
      y[j + 16] = dl * static_cast<float>(kIq4NlValues[q[j] >> 4]);
    }
  }
}

}  // namespace

void KQuantScaleMin(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

int Q3KScale(const uint8_t* s, int j) {
  int v;
  if (j < 4) {
    v = (s[j] & 0x0F) | ((s[j + 8] & 3) << 4);
  } else if (j < 8) {
    v = (s[j] & 0x0F) | (((s[j + 4] >> 2) & 3) << 4);
  } else if (j < 12) {
    v = (s[j - 8] >> 4) | (((s[j] >> 4) & 3) << 4);
  } else {
    v = (s[j - 8] >> 4) | (((s[j - 4] >> 6) & 3) << 4);
  }
  return v - 32;
}

bool DequantizeQuantBlocks(TensorType type, const uint8_t* src, int64_t blocks, float* dst) {
  void (*decode)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case T::kQ4_1:
      decode = Q4_1;
      break;
    case T::kQ5_0:
      decode = Q5_0;
      break;
    case T::kQ5_1:
      decode = Q5_1;
      break;
    case T::kIQ4_NL:
      decode = Iq4Nl;
      break;
    case T::kQ2_K:
      decode = Q2_K;
      break;
    case T::kQ3_K:
      decode = Q3_K;
      break;
    case T::kQ4_K:
      decode = [](const uint8_t* b, float* y) { Q45_K(b, false, y); };
      break;
    case T::kQ5_K:
      decode = [](const uint8_t* b, float* y) { Q45_K(b, true, y); };
      break;
    case T::kQ6_K:
      decode = Q6_K;
      break;
    case T::kIQ4_XS:
      decode = Iq4Xs;
      break;
    default:
      return false;
  }
  const TensorTypeTraits& traits = GetTraits(type);
  for (int64_t i = 0; i < blocks; ++i) {
    decode(src + i * traits.bytes_per_block, dst + i * traits.block_size);
  }
  return true;
}

}  // namespace tandem
