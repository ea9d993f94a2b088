// Kernels for attention over a KV cache whose rows are stored as f32, f16 or i8:
//   - key scores over a block of 16 cached positions whose keys are stored transposed
//     ([head_dim][16]: element k of the 16 positions side by side), so one vector lane holds
//     one position and no horizontal sums are needed;
//   - the attention-weighted sum of value rows.
// Each has a scalar reference; the fast versions are chosen once at run time from the CPU.
//
// Every function's arithmetic for an output element depends only on its own inputs (fixed
// lane assignment and summation order), so a position's score and a head's output are the
// same however many positions a call covers: alone or in a batch, on any thread.
#ifndef TANDEM_CORE_KERNELS_VECTOR_OPS_H_
#define TANDEM_CORE_KERNELS_VECTOR_OPS_H_

#include <cstdint>

namespace tandem {

// Positions per transposed key block.
inline constexpr int64_t kKeyBlock = 16;

// For each of n_q queries j (at q + j · q_stride), over one block of 16 positions:
//   out[j · out_stride + l] = (Σ_k q_j[k] · block[16k + l]) · scale     l < 16, k < dim
// with k in order within four partial sums (k mod 4), combined as (s0 + s1) + (s2 + s3).
// The queries of a group (the heads sharing a KV head) share each load of the block; a
// query's result does not depend on n_q. The i8 form multiplies each position's sum by its
// row scale lane_scales[l] before `scale` (null lane_scales: by 1).
void KeyBlockScoresF32(const float* q, int64_t q_stride, int n_q, const float* block, int64_t dim,
                       float scale, float* out, int64_t out_stride);
void KeyBlockScoresF16(const float* q, int64_t q_stride, int n_q, const uint16_t* block,
                       int64_t dim, float scale, float* out, int64_t out_stride);
void KeyBlockScoresI8(const float* q, int64_t q_stride, int n_q, const float* lane_scales,
                      const int8_t* block, int64_t dim, float scale, float* out,
                      int64_t out_stride);

// For each of n_q weight vectors j (at w + j · w_stride), over n rows of dim values:
//   out[j · out_stride + d] = Σ_p w_j[p] · rows[p · dim + d]     (out is overwritten)
// with even and odd p in two partial sums added at the end. The i8 form weighs row p by
// w_j[p] · scales[p]. A weight vector's result does not depend on n_q.
void WeightedSumF32(const float* w, int64_t w_stride, int n_q, const float* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride);
void WeightedSumF16(const float* w, int64_t w_stride, int n_q, const uint16_t* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride);
void WeightedSumI8(const float* w, int64_t w_stride, int n_q, const float* scales,
                   const int8_t* rows, int64_t n, int64_t dim, float* out, int64_t out_stride);

// The same sums over rows kept in blocks of kKeyBlock rows anywhere in memory (a paged KV
// cache): block b holds rows [16b, 16b + 16) row-major ([16][dim]), and for i8 scales[b]
// their 16 row scales. Bit-identical to WeightedSum* over the same rows stored contiguously
// (same accumulation order); blocks[b] is read only for b < ceil(n / 16).
void WeightedSumBlocksF32(const float* w, int64_t w_stride, int n_q, const float* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride);
void WeightedSumBlocksF16(const float* w, int64_t w_stride, int n_q, const uint16_t* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride);
void WeightedSumBlocksI8(const float* w, int64_t w_stride, int n_q, const float* const* scales,
                         const int8_t* const* blocks, int64_t n, int64_t dim, float* out,
                         int64_t out_stride);

// out[i] = half(in[i]), rounding to nearest even.
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n);

// The scalar references (the same partial sums, each a plain multiply and add).
namespace reference {
void KeyBlockScoresF32(const float* q, int64_t q_stride, int n_q, const float* block, int64_t dim,
                       float scale, float* out, int64_t out_stride);
void KeyBlockScoresF16(const float* q, int64_t q_stride, int n_q, const uint16_t* block,
                       int64_t dim, float scale, float* out, int64_t out_stride);
void KeyBlockScoresI8(const float* q, int64_t q_stride, int n_q, const float* lane_scales,
                      const int8_t* block, int64_t dim, float scale, float* out,
                      int64_t out_stride);
void WeightedSumF32(const float* w, int64_t w_stride, int n_q, const float* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride);
void WeightedSumF16(const float* w, int64_t w_stride, int n_q, const uint16_t* rows, int64_t n,
                    int64_t dim, float* out, int64_t out_stride);
void WeightedSumI8(const float* w, int64_t w_stride, int n_q, const float* scales,
                   const int8_t* rows, int64_t n, int64_t dim, float* out, int64_t out_stride);
void WeightedSumBlocksF32(const float* w, int64_t w_stride, int n_q, const float* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride);
void WeightedSumBlocksF16(const float* w, int64_t w_stride, int n_q, const uint16_t* const* blocks,
                          int64_t n, int64_t dim, float* out, int64_t out_stride);
void WeightedSumBlocksI8(const float* w, int64_t w_stride, int n_q, const float* const* scales,
                         const int8_t* const* blocks, int64_t n, int64_t dim, float* out,
                         int64_t out_stride);
void ConvertF32ToF16(const float* in, uint16_t* out, int64_t n);
}  // namespace reference

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_VECTOR_OPS_H_
