#include "core/kernels/rope.h"

#include <cmath>

namespace tandem {

RopeTable::RopeTable(int64_t rot_dim, float base, float scale, int64_t max_positions,
                     const std::vector<float>& freq_factors)
    : rot_dim_(rot_dim),
      max_positions_(max_positions),
      cos_(max_positions * (rot_dim / 2)),
      sin_(max_positions * (rot_dim / 2)) {
  const int64_t pairs = rot_dim / 2;
  for (int64_t p = 0; p < max_positions; ++p) {
    for (int64_t i = 0; i < pairs; ++i) {
      // Angles in double so long contexts keep their precision; stored as float.
      const double factor = freq_factors.empty() ? 1.0 : double{freq_factors[i]};
      const double theta = std::pow(double{base}, -2.0 * i / rot_dim) / scale / factor;
      const double angle = p * theta;
      cos_[p * pairs + i] = static_cast<float>(std::cos(angle));
      sin_[p * pairs + i] = static_cast<float>(std::sin(angle));
    }
  }
}

namespace {

// Element indices of pair i in a head.
inline void PairIndices(RopeLayout layout, int64_t rot_dim, int64_t i, int64_t* a, int64_t* b) {
  if (layout == RopeLayout::kInterleaved) {
    *a = 2 * i;
    *b = 2 * i + 1;
  } else {
    *a = i;
    *b = i + rot_dim / 2;
  }
}

}  // namespace

void ApplyRope(const RopeTable& table, RopeLayout layout, int64_t position, int64_t n_heads,
               int64_t head_dim, float* x) {
  const int64_t rot_dim = table.rot_dim();
  const float* cos = table.cos(position);
  const float* sin = table.sin(position);
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      int64_t a, b;
      PairIndices(layout, rot_dim, i, &a, &b);
      const float x0 = head[a], x1 = head[b];
      head[a] = x0 * cos[i] - x1 * sin[i];
      head[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

void ApplyRopeReference(int64_t rot_dim, float base, float scale, RopeLayout layout,
                        int64_t position, int64_t n_heads, int64_t head_dim, float* x,
                        const float* freq_factors) {
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      const double factor = freq_factors == nullptr ? 1.0 : double{freq_factors[i]};
      const double angle = position * std::pow(double{base}, -2.0 * i / rot_dim) / scale / factor;
      int64_t a, b;
      PairIndices(layout, rot_dim, i, &a, &b);
      const double x0 = head[a], x1 = head[b];
      head[a] = static_cast<float>(x0 * std::cos(angle) - x1 * std::sin(angle));
      head[b] = static_cast<float>(x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
}

}  // namespace tandem
