#include "core/kernels/vector_ops.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/tensor_type.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct Inputs {
  std::vector<float> a, f32, out;
  std::vector<uint16_t> f16;
  std::vector<int8_t> i8;
};

Inputs Make(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Inputs in;
  for (int64_t i = 0; i < n; ++i) {
    in.a.push_back(dist(rng));
    in.f32.push_back(dist(rng));
    in.out.push_back(dist(rng));
    in.f16.push_back(F32ToFp16(dist(rng)));
    in.i8.push_back(static_cast<int8_t>(static_cast<int>(rng() % 255) - 127));
  }
  return in;
}

// Keys are stored transposed in blocks of 16 positions; every head size (multiples of 4 and
// not) and group of 1 to 6 queries gives the reference's scores for all 16 positions.
TEST(VectorOpsTest, KeyBlockScoresMatchTheReference) {
  for (int64_t dim : {1, 3, 8, 17, 64, 80, 128}) {
    for (int n_q : {1, 3, 6}) {
      const Inputs in = Make(dim * kKeyBlock * n_q, static_cast<uint32_t>(dim + n_q));
      const float tolerance = 1e-5f * dim;
      std::vector<float> fast(n_q * kKeyBlock), ref(n_q * kKeyBlock);
      for (int kind = 0; kind < 3; ++kind) {
        const float* q = in.a.data();
        if (kind == 0) {
          KeyBlockScoresF32(q, dim, n_q, in.f32.data(), dim, 1.0f, fast.data(), kKeyBlock);
          reference::KeyBlockScoresF32(q, dim, n_q, in.f32.data(), dim, 1.0f, ref.data(),
                                       kKeyBlock);
        } else if (kind == 1) {
          KeyBlockScoresF16(q, dim, n_q, in.f16.data(), dim, 1.0f, fast.data(), kKeyBlock);
          reference::KeyBlockScoresF16(q, dim, n_q, in.f16.data(), dim, 1.0f, ref.data(),
                                       kKeyBlock);
        } else {
          KeyBlockScoresI8(q, dim, n_q, nullptr, in.i8.data(), dim, 1.0f, fast.data(), kKeyBlock);
          reference::KeyBlockScoresI8(q, dim, n_q, nullptr, in.i8.data(), dim, 1.0f, ref.data(),
                                      kKeyBlock);
        }
        for (int i = 0; i < n_q * kKeyBlock; ++i) {
          EXPECT_NEAR(fast[i], ref[i], (kind == 2 ? 100 : 1) * tolerance)
              << "kind " << kind << " dim " << dim << " n_q " << n_q << " i " << i;
        }
      }
    }
  }
}

// Lane l of a key block is position l: its score is the dot product with that position's
// key, computed the same whatever the other positions hold.
TEST(VectorOpsTest, KeyBlockLaneIsOnePositionsDotProduct) {
  const int64_t dim = 8;
  std::vector<float> q = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> block(dim * kKeyBlock, 0.0f);
  for (int64_t k = 0; k < dim; ++k) block[kKeyBlock * k + 5] = 1.0f;            // position 5
  for (int64_t k = 0; k < dim; ++k) block[kKeyBlock * k + 9] = k == 2 ? 2 : 0;  // position 9
  float out[kKeyBlock];
  KeyBlockScoresF32(q.data(), dim, 1, block.data(), dim, 1.0f, out, kKeyBlock);
  for (int l = 0; l < kKeyBlock; ++l) {
    EXPECT_EQ(out[l], l == 5 ? 36.0f : l == 9 ? 6.0f : 0.0f) << l;
  }
}

// Scores are (dot · the position's row scale) · scale: the i8 row scales per lane, then the
// caller's scale, in both the fast path and the reference.
TEST(VectorOpsTest, KeyBlockScoresApplyRowScalesThenTheScale) {
  const int64_t dim = 4;
  std::vector<float> q = {1, 2, 3, 4};
  std::vector<int8_t> block(dim * kKeyBlock, 0);
  for (int64_t k = 0; k < dim; ++k) block[kKeyBlock * k + 3] = 1;  // position 3: dot 10
  for (int64_t k = 0; k < dim; ++k) block[kKeyBlock * k + 7] = 2;  // position 7: dot 20
  std::vector<float> lane_scales(kKeyBlock, 1.0f);
  lane_scales[3] = 0.5f;
  lane_scales[7] = 0.25f;
  float fast[kKeyBlock], ref[kKeyBlock];
  KeyBlockScoresI8(q.data(), dim, 1, lane_scales.data(), block.data(), dim, 0.125f, fast,
                   kKeyBlock);
  reference::KeyBlockScoresI8(q.data(), dim, 1, lane_scales.data(), block.data(), dim, 0.125f, ref,
                              kKeyBlock);
  for (int l = 0; l < kKeyBlock; ++l) {
    const float expected = l == 3 ? 0.625f : l == 7 ? 0.625f : 0.0f;
    EXPECT_EQ(fast[l], expected) << l;
    EXPECT_EQ(ref[l], expected) << l;
  }
}

// A query's scores and a weight vector's sum are bit-identical alone or in a group: the
// group only shares loads.
TEST(VectorOpsTest, GroupsGiveEachQueryItsOwnResultBitForBit) {
  const int64_t dim = 64, n = 37;
  const Inputs in = Make(n * dim, 41);
  for (int n_q : {2, 3, 4, 5}) {
    std::vector<float> grouped(n_q * kKeyBlock), alone(kKeyBlock);
    KeyBlockScoresF16(in.a.data(), dim, n_q, in.f16.data(), dim, 1.0f, grouped.data(), kKeyBlock);
    std::vector<float> sums(n_q * dim), one(dim);
    WeightedSumF16(in.f32.data(), n, n_q, in.f16.data(), n, dim, sums.data(), dim);
    for (int j = 0; j < n_q; ++j) {
      KeyBlockScoresF16(in.a.data() + j * dim, dim, 1, in.f16.data(), dim, 1.0f, alone.data(),
                        kKeyBlock);
      EXPECT_EQ(0, std::memcmp(alone.data(), grouped.data() + j * kKeyBlock, sizeof(float) * 16))
          << n_q << " " << j;
      WeightedSumF16(in.f32.data() + j * n, n, 1, in.f16.data(), n, dim, one.data(), dim);
      EXPECT_EQ(0, std::memcmp(one.data(), sums.data() + j * dim, sizeof(float) * dim))
          << n_q << " " << j;
    }
  }
}

TEST(VectorOpsTest, WeightedSumsMatchTheReferenceAndWriteOnlyDimElements) {
  for (int64_t dim : {1, 8, 17, 64, 80, 128}) {
    for (int64_t n : {1, 2, 5, 33}) {
      for (int n_q : {1, 3, 4, 6}) {
        const Inputs in = Make(n * (dim + n_q) + 4, static_cast<uint32_t>(dim * 100 + n + n_q));
        std::vector<float> scales(n);
        for (int64_t p = 0; p < n; ++p) scales[p] = 0.01f * static_cast<float>(p + 1);
        const int64_t stride = dim + 4;  // each vector's output, then 4 untouched
        for (int kind = 0; kind < 3; ++kind) {
          std::vector<float> fast(n_q * stride, 7.0f), ref(n_q * stride, 7.0f);
          const float* w = in.a.data();
          if (kind == 0) {
            WeightedSumF32(w, n, n_q, in.f32.data(), n, dim, fast.data(), stride);
            reference::WeightedSumF32(w, n, n_q, in.f32.data(), n, dim, ref.data(), stride);
          } else if (kind == 1) {
            WeightedSumF16(w, n, n_q, in.f16.data(), n, dim, fast.data(), stride);
            reference::WeightedSumF16(w, n, n_q, in.f16.data(), n, dim, ref.data(), stride);
          } else {
            WeightedSumI8(w, n, n_q, scales.data(), in.i8.data(), n, dim, fast.data(), stride);
            reference::WeightedSumI8(w, n, n_q, scales.data(), in.i8.data(), n, dim, ref.data(),
                                     stride);
          }
          for (int j = 0; j < n_q; ++j) {
            for (int64_t d = 0; d < dim; ++d) {
              EXPECT_NEAR(fast[j * stride + d], ref[j * stride + d], 1e-5f * n)
                  << kind << " dim " << dim << " n " << n << " n_q " << n_q;
            }
            for (int64_t d = dim; d < stride; ++d) EXPECT_EQ(fast[j * stride + d], 7.0f);
          }
        }
      }
    }
  }
}

// Rows of a paged KV cache sit in blocks of 16 anywhere in memory: the block-addressed sums
// give the contiguous sums bit for bit, in the fast path and in the reference, for every
// type, row count (whole and partial last blocks), head size and group of queries.
TEST(VectorOpsTest, WeightedSumsOverBlocksAreBitIdenticalToContiguousRows) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 200);
    const int64_t dim = int64_t{32} << (trial / 6 % 3);  // 32, 64, 128
    const int n_q = 1 + trial % 6;
    const int64_t n_blocks = (n + kKeyBlock - 1) / kKeyBlock;
    const Inputs in = Make(n_blocks * kKeyBlock * dim + n_q * n, static_cast<uint32_t>(trial));
    std::vector<float> scales(n_blocks * kKeyBlock);
    for (float& s : scales) s = 0.001f * static_cast<float>(rng() % 1000 + 1);
    // Each block copied to its own allocation, in reverse order of address.
    std::vector<std::vector<float>> f32(n_blocks), scale_blocks(n_blocks);
    std::vector<std::vector<uint16_t>> f16(n_blocks);
    std::vector<std::vector<int8_t>> i8(n_blocks);
    std::vector<const float*> f32_ptrs(n_blocks), scale_ptrs(n_blocks);
    std::vector<const uint16_t*> f16_ptrs(n_blocks);
    std::vector<const int8_t*> i8_ptrs(n_blocks);
    for (int64_t b = n_blocks - 1; b >= 0; --b) {
      const int64_t first = b * kKeyBlock * dim, last = first + kKeyBlock * dim;
      f32[b].assign(in.f32.begin() + first, in.f32.begin() + last);
      f16[b].assign(in.f16.begin() + first, in.f16.begin() + last);
      i8[b].assign(in.i8.begin() + first, in.i8.begin() + last);
      scale_blocks[b].assign(scales.begin() + b * kKeyBlock, scales.begin() + (b + 1) * kKeyBlock);
      f32_ptrs[b] = f32[b].data();
      f16_ptrs[b] = f16[b].data();
      i8_ptrs[b] = i8[b].data();
      scale_ptrs[b] = scale_blocks[b].data();
    }
    const float* w = in.a.data();
    for (bool fast : {true, false}) {
      for (int kind = 0; kind < 3; ++kind) {
        std::vector<float> rows_out(n_q * dim, 1.0f), blocks_out(n_q * dim, 2.0f);
        float* ro = rows_out.data();
        float* bo = blocks_out.data();
        if (kind == 0 && fast) {
          WeightedSumF32(w, n, n_q, in.f32.data(), n, dim, ro, dim);
          WeightedSumBlocksF32(w, n, n_q, f32_ptrs.data(), n, dim, bo, dim);
        } else if (kind == 0) {
          reference::WeightedSumF32(w, n, n_q, in.f32.data(), n, dim, ro, dim);
          reference::WeightedSumBlocksF32(w, n, n_q, f32_ptrs.data(), n, dim, bo, dim);
        } else if (kind == 1 && fast) {
          WeightedSumF16(w, n, n_q, in.f16.data(), n, dim, ro, dim);
          WeightedSumBlocksF16(w, n, n_q, f16_ptrs.data(), n, dim, bo, dim);
        } else if (kind == 1) {
          reference::WeightedSumF16(w, n, n_q, in.f16.data(), n, dim, ro, dim);
          reference::WeightedSumBlocksF16(w, n, n_q, f16_ptrs.data(), n, dim, bo, dim);
        } else if (fast) {
          WeightedSumI8(w, n, n_q, scales.data(), in.i8.data(), n, dim, ro, dim);
          WeightedSumBlocksI8(w, n, n_q, scale_ptrs.data(), i8_ptrs.data(), n, dim, bo, dim);
        } else {
          reference::WeightedSumI8(w, n, n_q, scales.data(), in.i8.data(), n, dim, ro, dim);
          reference::WeightedSumBlocksI8(w, n, n_q, scale_ptrs.data(), i8_ptrs.data(), n, dim, bo,
                                         dim);
        }
        EXPECT_EQ(0, std::memcmp(ro, bo, sizeof(float) * n_q * dim))
            << "kind " << kind << " fast " << fast << " n " << n << " dim " << dim << " n_q "
            << n_q;
      }
    }
  }
}

TEST(VectorOpsTest, HalfConversionRoundsExactlyLikeTheReference) {
  std::vector<float> values = {0.0f,    -0.0f, 1.0f,     65504.0f, 65520.0f, 1e-8f,
                               6.1e-5f, -2.5f, 3.14159f, 1e10f,    -1e-7f,   0.33333334f};
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  for (int i = 0; i < 1000; ++i) values.push_back(dist(rng));
  std::vector<uint16_t> fast(values.size()), ref(values.size());
  ConvertF32ToF16(values.data(), fast.data(), values.size());
  reference::ConvertF32ToF16(values.data(), ref.data(), values.size());
  EXPECT_EQ(fast, ref);
}

}  // namespace
}  // namespace tandem
