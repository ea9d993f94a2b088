// Matrix multiplication of activations by a weight matrix stored in any supported tensor type,
// the operation that dominates a forward pass.
//
//   y[n, rows] = x[n, cols] · Wᵀ      (W is [rows, cols], one output feature per row)
//
// Batch invariance: the value of y[i, j] depends only on x[i, :] and W[j, :], never on n, on
// the other rows of x, or on how the rows of W are split across threads. Every path computes
// each dot product with the same sequence of operations whatever the batch: a fixed number of
// accumulators per x row, chunks assigned to them by position, and a fixed final reduction.
// This is what makes a token's logits bit-identical alone, in a verify batch, or in a prefill
// chunk (and greedy speculation exact).
//
// Memory traffic: W is read in blocks of rows (or packed panels of 16 rows) that stay in cache
// while every tile of x rows is applied to them, so a batch of k+1 rows streams each weight
// row from memory once.
#ifndef TANDEM_CORE_KERNELS_MATMUL_H_
#define TANDEM_CORE_KERNELS_MATMUL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/kernels/thread_pool.h"
#include "core/model/tensor_type.h"

namespace tandem {

// How a matmul of a quantized weight matrix quantizes its activations, per 32-column block
// of each x row (x ≈ s · q, s = max|x| / L):
//   kInt16  L = 32767: the logits stay within ~5e-3 of exact math on the quantized weights.
//   kInt8   L = 127: the integer multiplies run twice as wide (vpdpbusd) where compute binds
//           (prefill, many streams); the logits move about as far as llama.cpp's own do
//           (its activations are Q8_0/Q8_K), figures in README.md "Activation precision".
// Either way a position's logits are bit-identical alone, in a batch or on any thread count.
// Chosen per model at load (ModelLoadOptions); float weights (F32, F16, BF16) ignore it.
enum class ActivationPrecision { kInt16, kInt8 };
inline int32_t ActivationLimit(ActivationPrecision p) {
  return p == ActivationPrecision::kInt8 ? 127 : 32767;
}
absl::string_view ActivationPrecisionName(ActivationPrecision p);  // "int16", "int8"
// "int16" or "int8"; kInvalidArgument naming the value otherwise.
absl::StatusOr<ActivationPrecision> ParseActivationPrecision(absl::string_view name);

// A weight matrix [rows, cols] stored row by row in `type` (rows `row_bytes` apart), and
// optionally also as panels of 16 interleaved rows (packed_matrix.h) that the AVX-512 path
// reads instead. `data` is always valid: other paths and row lookups (embeddings) use it.
struct WeightMatrix {
  TensorType type = TensorType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* data = nullptr;
  int64_t row_bytes = 0;
  const uint8_t* packed = nullptr;  // PackMatrix(*this) or null; owned elsewhere
  ActivationPrecision activations = ActivationPrecision::kInt16;  // of the integer paths
  // `packed` holds the int8 kernels' layout (UsesInt8Panels, packed_matrix.h); set with it.
  bool int8_panels = false;
};

// Which instruction set the fast path uses; chosen once at run time from the CPU.
// kAvx512Vnni is kAvx512 plus integer dot products for Q8_0 and Q4_0 panels (activations quantized
// to int16 per 32-column block; matmul_panel_vnni.cc), the other types as kAvx512. The other block
// types (Q5_0, Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q2_K..Q6_K) take one integer panel kernel on both
// AVX-512 paths (matmul_panel_kquant.cc, bit-identical with and without VNNI); AVX2 and scalar
// decode their rows to floats.
enum class KernelIsa { kScalar, kAvx2, kAvx512, kAvx512Vnni };
KernelIsa DetectKernelIsa();
absl::string_view KernelIsaName(KernelIsa isa);

// Buffers a caller's matmuls reuse (the VNNI path quantizes activations into them), so that
// after the first calls of a size a decode step allocates nothing. One per caller (e.g. per
// Decoder); without one, MatMul uses buffers of the calling thread.
struct MatMulScratch {
  std::vector<int16_t> q;
  std::vector<int8_t> q8;          // int8 mode's bytes
  std::vector<int32_t> half_sums;  // and their sums per 16 columns
  std::vector<float> rounded;      // int8 mode on the float paths: x rounded to the int8 grid
  std::vector<float> scales;
  std::vector<int32_t> sums;
  std::vector<float> scaled_sums;  // scales · sums
};

// y[n, w.rows] = x[n, w.cols] · Wᵀ with the best path for this CPU. W's type must be
// supported (CheckSupported) and w.cols a multiple of its block size; checked by the loader.
void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool,
            MatMulScratch* scratch = nullptr);

// One matrix's output in MatMulShared.
struct MatMulOutput {
  const WeightMatrix* w;
  float* y;  // [n, w->rows]
};

// y = x · Wᵀ for each output, all of the same x (e.g. the q, k and v projections), as one
// parallel loop where the paths allow: each y is exactly what MatMul gives it.
void MatMulShared(absl::Span<const MatMulOutput> outputs, const float* x, int64_t n,
                  ThreadPool& pool, MatMulScratch* scratch = nullptr);

// The same with a chosen path (for tests and benchmarks); falls back to scalar when `isa`
// is not available on this CPU.
void MatMulWithIsa(KernelIsa isa, const WeightMatrix& w, const float* x, int64_t n, float* y,
                   ThreadPool& pool, MatMulScratch* scratch = nullptr);

// Scalar reference: dequantizes each row with DequantizeRow and accumulates in double.
void MatMulReference(const WeightMatrix& w, const float* x, int64_t n, float* y);

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_MATMUL_H_
