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
// not) gives the reference's scores for all 16 positions.
TEST(VectorOpsTest, KeyBlockScoresMatchTheReference) {
  for (int64_t dim : {1, 3, 8, 17, 64, 80, 128}) {
    const Inputs in = Make(dim * kKeyBlock, static_cast<uint32_t>(dim));
    const float tolerance = 1e-5f * dim;
    float fast[kKeyBlock], ref[kKeyBlock];
    KeyBlockScoresF32(in.a.data(), in.f32.data(), dim, fast);
    reference::KeyBlockScoresF32(in.a.data(), in.f32.data(), dim, ref);
    for (int l = 0; l < kKeyBlock; ++l) EXPECT_NEAR(fast[l], ref[l], tolerance) << dim << " " << l;
    KeyBlockScoresF16(in.a.data(), in.f16.data(), dim, fast);
    reference::KeyBlockScoresF16(in.a.data(), in.f16.data(), dim, ref);
    for (int l = 0; l < kKeyBlock; ++l) EXPECT_NEAR(fast[l], ref[l], tolerance) << dim << " " << l;
    KeyBlockScoresI8(in.a.data(), in.i8.data(), dim, fast);
    reference::KeyBlockScoresI8(in.a.data(), in.i8.data(), dim, ref);
    for (int l = 0; l < kKeyBlock; ++l) {
      EXPECT_NEAR(fast[l], ref[l], 100 * tolerance) << dim << " " << l;
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
  KeyBlockScoresF32(q.data(), block.data(), dim, out);
  for (int l = 0; l < kKeyBlock; ++l) {
    EXPECT_EQ(out[l], l == 5 ? 36.0f : l == 9 ? 6.0f : 0.0f) << l;
  }
}

TEST(VectorOpsTest, WeightedSumsMatchTheReferenceAndWriteOnlyDimElements) {
  for (int64_t dim : {1, 8, 17, 64, 80, 128}) {
    for (int64_t n : {1, 2, 5, 33}) {
      const Inputs in = Make(n * dim + 4, static_cast<uint32_t>(dim * 100 + n));
      std::vector<float> scales(n);
      for (int64_t p = 0; p < n; ++p) scales[p] = 0.01f * static_cast<float>(p + 1);
      for (int kind = 0; kind < 3; ++kind) {
        std::vector<float> fast(dim + 4, 7.0f), ref(dim + 4, 7.0f);
        if (kind == 0) {
          WeightedSumF32(in.a.data(), in.f32.data(), n, dim, fast.data());
          reference::WeightedSumF32(in.a.data(), in.f32.data(), n, dim, ref.data());
        } else if (kind == 1) {
          WeightedSumF16(in.a.data(), in.f16.data(), n, dim, fast.data());
          reference::WeightedSumF16(in.a.data(), in.f16.data(), n, dim, ref.data());
        } else {
          WeightedSumI8(in.a.data(), scales.data(), in.i8.data(), n, dim, fast.data());
          reference::WeightedSumI8(in.a.data(), scales.data(), in.i8.data(), n, dim, ref.data());
        }
        for (int64_t d = 0; d < dim; ++d) {
          EXPECT_NEAR(fast[d], ref[d], 1e-5f * n) << kind << " dim " << dim << " n " << n;
        }
        for (int64_t d = dim; d < dim + 4; ++d) EXPECT_EQ(fast[d], 7.0f);  // tail untouched
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
