#include "core/model/tensor_type.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/model/quant_blocks.h"

namespace tandem {
namespace {

using T = TensorType;

// Block layouts as ggml defines them (ggml-common.h); QK_K = 256 for the K/IQ families.
constexpr TensorTypeTraits kTraits[] = {
    {T::kF32, "F32", 1, 4, true},           {T::kF16, "F16", 1, 2, true},
    {T::kQ4_0, "Q4_0", 32, 18, true},  // fp16 d + 16 bytes of nibbles
    {T::kQ4_1, "Q4_1", 32, 20, true},       {T::kQ5_0, "Q5_0", 32, 22, true},
    {T::kQ5_1, "Q5_1", 32, 24, true},       {T::kQ8_0, "Q8_0", 32, 34, true},  // fp16 d + 32 int8
    {T::kQ8_1, "Q8_1", 32, 36, false},      {T::kQ2_K, "Q2_K", 256, 84, true},
    {T::kQ3_K, "Q3_K", 256, 110, true},     {T::kQ4_K, "Q4_K", 256, 144, true},
    {T::kQ5_K, "Q5_K", 256, 176, true},     {T::kQ6_K, "Q6_K", 256, 210, true},
    {T::kQ8_K, "Q8_K", 256, 292, false},    {T::kIQ2_XXS, "IQ2_XXS", 256, 66, false},
    {T::kIQ2_XS, "IQ2_XS", 256, 74, false}, {T::kIQ3_XXS, "IQ3_XXS", 256, 98, false},
    {T::kIQ1_S, "IQ1_S", 256, 50, false},   {T::kIQ4_NL, "IQ4_NL", 32, 18, true},
    {T::kIQ3_S, "IQ3_S", 256, 110, false},  {T::kIQ2_S, "IQ2_S", 256, 82, false},
    {T::kIQ4_XS, "IQ4_XS", 256, 136, true}, {T::kI8, "I8", 1, 1, false},
    {T::kI16, "I16", 1, 2, false},          {T::kI32, "I32", 1, 4, false},
    {T::kI64, "I64", 1, 8, false},          {T::kF64, "F64", 1, 8, false},
    {T::kIQ1_M, "IQ1_M", 256, 56, false},   {T::kBF16, "BF16", 1, 2, true},
    {T::kTQ1_0, "TQ1_0", 256, 54, false},   {T::kTQ2_0, "TQ2_0", 256, 66, false},
    {T::kMXFP4, "MXFP4", 32, 17, false},
};

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Rounds `value >> shift` to nearest, ties to even (shift >= 1).
uint32_t ShiftRoundEven(uint32_t value, int shift) {
  const uint32_t quotient = value >> shift;
  const uint32_t remainder = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  const bool round_up = remainder > half || (remainder == half && (quotient & 1));
  return quotient + (round_up ? 1 : 0);
}

void DequantizeQ8_0(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t block = 0; block < n / 32; ++block, src += 34, dst += 32) {
    const float d = Fp16ToF32(LoadU16(src));
    for (int i = 0; i < 32; ++i) dst[i] = static_cast<int8_t>(src[2 + i]) * d;
  }
}

void DequantizeQ4_0(const uint8_t* src, int64_t n, float* dst) {
  for (int64_t block = 0; block < n / 32; ++block, src += 18, dst += 32) {
    const float d = Fp16ToF32(LoadU16(src));
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = src[2 + j];
      dst[j] = ((q & 0x0F) - 8) * d;     // low nibbles: elements 0..15
      dst[j + 16] = ((q >> 4) - 8) * d;  // high nibbles: elements 16..31
    }
  }
}

}  // namespace

std::optional<TensorTypeTraits> TensorTypeFromId(uint32_t id) {
  for (const TensorTypeTraits& traits : kTraits) {
    if (static_cast<uint32_t>(traits.type) == id) return traits;
  }
  return std::nullopt;
}

const TensorTypeTraits& GetTraits(TensorType type) {
  for (const TensorTypeTraits& traits : kTraits) {
    if (traits.type == type) return traits;
  }
  // Every enumerator has a row; reaching here means a cast from an unchecked id.
  std::abort();
}

absl::Status CheckSupported(TensorType type, absl::string_view tensor_name) {
  if (GetTraits(type).supported) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat("tensor '", tensor_name, "' has type ",
                                               TensorTypeName(type),
                                               ", which is not supported yet"));
}

absl::StatusOr<int64_t> RowBytes(TensorType type, int64_t n) {
  const TensorTypeTraits& traits = GetTraits(type);
  if (n < 0 || n % traits.block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("row of ", n,
                                                   " elements is not a whole number of ",
                                                   traits.name, " blocks of ", traits.block_size));
  }
  const int64_t blocks = n / traits.block_size;
  if (blocks > std::numeric_limits<int64_t>::max() / traits.bytes_per_block) {
    return absl::OutOfRangeError(
        absl::StrCat("row of ", n, " ", traits.name, " elements overflows a byte count"));
  }
  return blocks * traits.bytes_per_block;
}

float Fp16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FF;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) {
    return BitsFloat(sign | 0x7F800000u | (mantissa << 13));  // inf, or NaN keeping its payload
  }
  // Rebias the exponent from 15 to 127 and widen the mantissa from 10 to 23 bits.
  return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float Bf16ToF32(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

uint16_t F32ToFp16(float f) {
  const uint32_t bits = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) {  // NaN: keep the top payload bits, force quiet so it stays NaN
    return sign | 0x7E00 | static_cast<uint16_t>((magnitude >> 13) & 0x1FF);
  }
  // 65520 = 0x477FF000 is halfway between the largest half (65504) and 2^16; it and
  // everything above round (ties to even) to infinity.
  if (magnitude >= 0x477FF000) return sign | 0x7C00;
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 113) {               // below 2^-14: a half subnormal (units of 2^-24) or zero
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    // value = mantissa * 2^(exponent - 150) = (mantissa >> (126 - exponent)) * 2^-24.
    return sign | static_cast<uint16_t>(ShiftRoundEven(mantissa, 126 - exponent));
  }
  // Normal: rebias 127 -> 15 and drop 13 mantissa bits. A carry out of the mantissa
  // correctly bumps the exponent.
  const uint32_t unrounded = ((exponent - 112) << 23) | (magnitude & 0x7FFFFF);
  return sign | static_cast<uint16_t>(ShiftRoundEven(unrounded, 13));
}

absl::Status DequantizeRow(TensorType type, absl::Span<const uint8_t> src, absl::Span<float> dst) {
  const int64_t n = static_cast<int64_t>(dst.size());
  ASSIGN_OR_RETURN(const int64_t bytes, RowBytes(type, n));
  if (static_cast<uint64_t>(bytes) != src.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a row of ", n, " ", TensorTypeName(type),
                                                   " elements takes ", bytes, " bytes, got ",
                                                   src.size()));
  }
  const uint8_t* p = src.data();
  float* out = dst.data();
  switch (type) {
    case T::kF32:
      if (n > 0) std::memcpy(out, p, static_cast<size_t>(bytes));
      break;
    case T::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = Fp16ToF32(LoadU16(p + 2 * i));
      break;
    case T::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(LoadU16(p + 2 * i));
      break;
    case T::kQ8_0:
      DequantizeQ8_0(p, n, out);
      break;
    case T::kQ4_0:
      DequantizeQ4_0(p, n, out);
      break;
    default:
      if (DequantizeQuantBlocks(type, p, n / GetTraits(type).block_size, out)) break;
      return absl::UnimplementedError(
          absl::StrCat("cannot dequantise type ", TensorTypeName(type), " yet"));
  }
  return absl::OkStatus();
}

}  // namespace tandem
