// The ggml tensor types that GGUF files carry, their block layouts, and scalar reference
// conversions to f32.
//
// Every type ggml has defined is known by id and name, so a file using one we cannot compute
// with yet (e.g. IQ2_XXS) parses and is then refused with kUnimplemented naming the type. A
// type is "supported" when DequantizeRow() handles it (the block-quantized types beyond Q8_0 /
// Q4_0 are decoded in quant_blocks.cc); adding one means filling in its dequantisation and
// flipping its `supported` bit in the table in tensor_type.cc.
//
// All functions are pure and thread-safe.
#ifndef TANDEM_CORE_MODEL_TENSOR_TYPE_H_
#define TANDEM_CORE_MODEL_TENSOR_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tandem {

// Ids as in ggml's `enum ggml_type` (they are what GGUF stores). Gaps are ids ggml removed.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// How a type lays out its elements: `block_size` consecutive elements of a row are stored in
// `bytes_per_block` bytes (1 and sizeof(element) for the plain types).
struct TensorTypeTraits {
  TensorType type;
  absl::string_view name;  // ggml's name: "F32", "Q8_0", "Q4_K", ...
  int64_t block_size;
  int64_t bytes_per_block;
  bool supported;  // DequantizeRow() handles it
};

// The traits of a known ggml id, or nullopt for an id ggml never defined (or removed).
std::optional<TensorTypeTraits> TensorTypeFromId(uint32_t id);
// The traits of `type` (always known).
const TensorTypeTraits& GetTraits(TensorType type);
inline absl::string_view TensorTypeName(TensorType type) { return GetTraits(type).name; }

// OK if `type` is supported; else kUnimplemented naming `tensor_name` and the type.
absl::Status CheckSupported(TensorType type, absl::string_view tensor_name);

// Bytes taken by a row of `n` elements: kInvalidArgument if `n` is negative or not a multiple
// of the block size, kOutOfRange if the size overflows int64.
absl::StatusOr<int64_t> RowBytes(TensorType type, int64_t n);

// IEEE half -> float, exact (every half is a float), including subnormals, inf and NaN.
float Fp16ToF32(uint16_t h);
// bfloat16 -> float, exact (a bfloat16 is the top half of a float).
float Bf16ToF32(uint16_t b);
// float -> IEEE half, rounding to nearest, ties to even; overflow gives inf, NaN stays NaN.
uint16_t F32ToFp16(float f);

// Scalar reference dequantisation of one row: `src` holds exactly RowBytes(type, dst.size())
// bytes of `type` (any alignment, little-endian). kUnimplemented for an unsupported type,
// kInvalidArgument if the sizes disagree.
absl::Status DequantizeRow(TensorType type, absl::Span<const uint8_t> src, absl::Span<float> dst);

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_TENSOR_TYPE_H_
