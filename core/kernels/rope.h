// Rotary position embedding. A head vector is a set of 2-D pairs; pair i at position p turns
// by angle p * theta_i, theta_i = base^(-2i / rot_dim) (divided by a linear scaling factor).
//
// Two layouts pair the elements differently:
//  - kInterleaved (GGUF llama): pairs (2i, 2i+1);
//  - kHalf (Hugging Face rotate_half, GGUF qwen2/neox): pairs (i, i + rot_dim/2).
// The same weights stored in either layout give the same vectors, permuted.
#ifndef TANDEM_CORE_KERNELS_ROPE_H_
#define TANDEM_CORE_KERNELS_ROPE_H_

#include <cstdint>
#include <vector>

namespace tandem {

enum class RopeLayout { kInterleaved, kHalf };

// Precomputed cos/sin per (position, pair) for positions [0, max_positions).
class RopeTable {
 public:
  // rot_dim <= head_dim is the number of rotated elements (even). `scale` >= 1 divides
  // positions (linear RoPE scaling). `freq_factors`, empty or rot_dim / 2 values, divide
  // pair i's frequency (Llama 3 RoPE scaling; llama.cpp's rope freq_factors).
  RopeTable(int64_t rot_dim, float base, float scale, int64_t max_positions,
            const std::vector<float>& freq_factors = {});

  int64_t rot_dim() const { return rot_dim_; }
  int64_t max_positions() const { return max_positions_; }
  const float* cos(int64_t position) const { return cos_.data() + position * (rot_dim_ / 2); }
  const float* sin(int64_t position) const { return sin_.data() + position * (rot_dim_ / 2); }

 private:
  int64_t rot_dim_;
  int64_t max_positions_;
  std::vector<float> cos_;  // [max_positions, rot_dim / 2]
  std::vector<float> sin_;
};

// Rotates n_heads head vectors of head_dim (x: [n_heads, head_dim], in place) at `position`.
void ApplyRope(const RopeTable& table, RopeLayout layout, int64_t position, int64_t n_heads,
               int64_t head_dim, float* x);

// Reference: angles and rotation in double, no table. `freq_factors`: null or rot_dim / 2.
void ApplyRopeReference(int64_t rot_dim, float base, float scale, RopeLayout layout,
                        int64_t position, int64_t n_heads, int64_t head_dim, float* x,
                        const float* freq_factors = nullptr);

}  // namespace tandem

#endif  // TANDEM_CORE_KERNELS_ROPE_H_
