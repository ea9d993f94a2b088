// RMSNorm, RoPE, softmax and SwiGLU against their double-precision references; the exact
// element-wise steps (RoPE's products, the residual add) against their float arithmetic.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/kernels/activations.h"
#include "core/kernels/gelu_softcap.h"
#include "core/kernels/rms_norm.h"
#include "core/kernels/rope.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

TEST(RmsNormTest, MatchesReferenceOnOddSizes) {
  for (int64_t dim : {1, 7, 64, 173, 960}) {
    const std::vector<float> x = Random(3 * dim, 1), w = Random(dim, 2);
    std::vector<float> fast(3 * dim), ref(3 * dim);
    RmsNorm(x.data(), w.data(), 3, dim, 1e-5f, fast.data());
    RmsNormReference(x.data(), w.data(), 3, dim, 1e-5f, ref.data());
    for (int64_t i = 0; i < 3 * dim; ++i)
      ASSERT_NEAR(fast[i], ref[i], 1e-5f * std::fabs(ref[i]) + 1e-6f);
  }
}

TEST(RmsNormTest, RowAloneEqualsRowInBatch) {
  for (int64_t dim : {7, 64, 173, 960}) {
    const std::vector<float> x = Random(5 * dim, 3), w = Random(dim, 4);
    std::vector<float> batch(5 * dim), alone(dim);
    RmsNorm(x.data(), w.data(), 5, dim, 1e-6f, batch.data());
    for (int64_t r = 0; r < 5; ++r) {
      RmsNorm(x.data() + r * dim, w.data(), 1, dim, 1e-6f, alone.data());
      ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + r * dim, dim * sizeof(float)))
          << "dim " << dim << " row " << r;
    }
  }
}

TEST(RmsNormTest, KnownValue) {
  // x = [3, 4]: mean square 12.5, so y = x / sqrt(12.5) with eps 0 and unit weights.
  const float x[2] = {3, 4}, w[2] = {1, 2};
  float y[2];
  RmsNorm(x, w, 1, 2, 0.0f, y);
  EXPECT_FLOAT_EQ(y[0], 3 / std::sqrt(12.5f));
  EXPECT_FLOAT_EQ(y[1], 2 * 4 / std::sqrt(12.5f));
}

TEST(RopeTest, MatchesReferenceForBothLayouts) {
  for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
    for (int64_t position : {0, 1, 17, 511}) {
      const int64_t head_dim = 16, heads = 3;
      RopeTable table(/*rot_dim=*/12, 10000.0f, 1.0f, 512);
      std::vector<float> fast = Random(heads * head_dim, 3), ref = fast;
      ApplyRope(table, layout, position, heads, head_dim, fast.data());
      ApplyRopeReference(12, 10000.0f, 1.0f, layout, position, heads, head_dim, ref.data());
      for (size_t i = 0; i < fast.size(); ++i) ASSERT_NEAR(fast[i], ref[i], 2e-6f) << i;
    }
  }
}

TEST(RopeTest, EachPairIsTheTablesProductsRoundedOnce) {
  // Every rotated pair is (x0 c - x1 s, x0 s + x1 c) in float with the table's c and s, each
  // product and sum rounded once, whatever the rotated width (vector tails included), the
  // layout or the head: a row's result is the same in any batch and on any CPU path.
  for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
    for (int64_t rot_dim : {2, 6, 12, 32, 34, 64, 96, 128}) {
      const int64_t head_dim = rot_dim + 6, heads = 3, position = 77;
      RopeTable table(rot_dim, 500000.0f, 1.0f, 128);
      const std::vector<float> in = Random(heads * head_dim, 9);
      std::vector<float> out = in;
      ApplyRope(table, layout, position, heads, head_dim, out.data());
      std::vector<float> want = in;
      const float* c = table.cos(position);
      const float* s = table.sin(position);
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < rot_dim / 2; ++i) {
          const int64_t a = h * head_dim + (layout == RopeLayout::kInterleaved ? 2 * i : i);
          const int64_t b = a + (layout == RopeLayout::kInterleaved ? 1 : rot_dim / 2);
          const float x0 = in[a], x1 = in[b];
          const float x0c = x0 * c[i], x1s = x1 * s[i], x0s = x0 * s[i], x1c = x1 * c[i];
          want[a] = x0c - x1s;
          want[b] = x0s + x1c;
        }
      }
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], want[i]) << "rot_dim " << rot_dim << " element " << i;
      }
    }
  }
}

TEST(RopeTest, FrequencyFactorsDivideEachPairsFrequency) {
  // Pair i with factor f turns as pair i under linear scaling by f (positions divided by f).
  const std::vector<float> factors = {1, 4, 4, 2, 8, 1};
  RopeTable scaled(12, 10000.0f, 1.0f, 16, factors);
  for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
    const std::vector<float> x = Random(12, 4);
    std::vector<float> fast = x, ref = x;
    ApplyRope(scaled, layout, 8, 1, 12, fast.data());
    ApplyRopeReference(12, 10000.0f, 1.0f, layout, 8, 1, 12, ref.data(), factors.data());
    for (size_t i = 0; i < fast.size(); ++i) ASSERT_NEAR(fast[i], ref[i], 2e-6f) << i;
    for (int64_t pair = 0; pair < 6; ++pair) {
      std::vector<float> plain = x;
      ApplyRopeReference(12, 10000.0f, factors[pair], layout, 8, 1, 12, plain.data());
      const int64_t a = layout == RopeLayout::kInterleaved ? 2 * pair : pair;
      const int64_t b = layout == RopeLayout::kInterleaved ? 2 * pair + 1 : pair + 6;
      EXPECT_NEAR(fast[a], plain[a], 2e-6f) << pair;
      EXPECT_NEAR(fast[b], plain[b], 2e-6f) << pair;
    }
  }
}

TEST(RopeTest, PositionZeroIsIdentityAndUnrotatedTailIsKept) {
  RopeTable table(4, 10000.0f, 1.0f, 4);
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  ApplyRope(table, RopeLayout::kInterleaved, 0, 1, 6, x.data());
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  ApplyRope(table, RopeLayout::kHalf, 3, 1, 6, x.data());
  EXPECT_EQ(x[4], 5);
  EXPECT_EQ(x[5], 6);
}

TEST(RopeTest, LayoutsAgreeUnderTheirPermutation) {
  // Interleaved element (2i, 2i+1) is half-layout element (i, i + d/2).
  const int64_t d = 8;
  RopeTable table(d, 10000.0f, 1.0f, 8);
  const std::vector<float> interleaved_in = Random(d, 4);
  std::vector<float> half_in(d);
  for (int64_t i = 0; i < d / 2; ++i) {
    half_in[i] = interleaved_in[2 * i];
    half_in[i + d / 2] = interleaved_in[2 * i + 1];
  }
  std::vector<float> a = interleaved_in, b = half_in;
  ApplyRope(table, RopeLayout::kInterleaved, 5, 1, d, a.data());
  ApplyRope(table, RopeLayout::kHalf, 5, 1, d, b.data());
  for (int64_t i = 0; i < d / 2; ++i) {
    EXPECT_EQ(a[2 * i], b[i]);
    EXPECT_EQ(a[2 * i + 1], b[i + d / 2]);
  }
}

TEST(SoftmaxTest, MatchesReferenceAndSumsToOne) {
  std::vector<float> fast = Random(513, 5, 10.0f), ref = fast;
  Softmax(fast.data(), 513);
  SoftmaxReference(ref.data(), 513);
  double sum = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    ASSERT_NEAR(fast[i], ref[i], 1e-6f);
    sum += fast[i];
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(SwiGluTest, MatchesReferenceOverTheFloatRange) {
  // Large |g| (exp overflows or vanishes), zeros and an odd size for the masked tail.
  std::vector<float> gate = {-1e30f, -200.0f, -88.0f, -20.0f, -1.0f,  -0.0f, 0.0f, 1e-20f,
                             0.5f,   3.0f,    20.0f,  88.0f,  200.0f, 1e30f, -3.5f};
  std::vector<float> ref = gate;
  const std::vector<float> up(gate.size(), 1.0f);
  SwiGlu(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
  SwiGluReference(ref.data(), up.data(), static_cast<int64_t>(ref.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    ASSERT_NEAR(gate[i], ref[i], 1e-6f * (1 + std::fabs(ref[i]))) << "element " << i;
  }
}

TEST(GeluTanhGluTest, MatchesReferenceAndKnownValues) {
  std::vector<float> gate = Random(257, 11, 3.0f), up = Random(257, 12);
  gate.push_back(0.0f);
  up.push_back(1.0f);
  gate.push_back(1.0f);  // gelu_tanh(1) = 0.841192 (tanh approximation)
  up.push_back(1.0f);
  std::vector<float> ref = gate;
  const int64_t n = static_cast<int64_t>(gate.size());
  GeluTanhGlu(gate.data(), up.data(), n);
  GeluTanhGluReference(ref.data(), up.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(gate[i], ref[i], 2e-6f * (1 + std::fabs(ref[i])));
  EXPECT_EQ(gate[n - 2], 0.0f);
  EXPECT_NEAR(gate[n - 1], 0.841192f, 1e-6f);
}

TEST(SoftcapTest, MatchesReferenceAndBoundsByTheCap) {
  std::vector<float> x = Random(300, 13, 40.0f);
  x.push_back(1e6f);
  std::vector<float> ref = x;
  const int64_t n = static_cast<int64_t>(x.size());
  Softcap(x.data(), n, 30.0f);
  SoftcapReference(ref.data(), n, 30.0f);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(x[i], ref[i], 4e-6f * 30.0f) << i;
    ASSERT_LE(std::fabs(x[i]), 30.0f) << i;
  }
  EXPECT_EQ(x[n - 1], 30.0f);
}

TEST(SwiGluTest, MatchesReference) {
  std::vector<float> gate = Random(100, 6, 4.0f), ref = gate;
  const std::vector<float> up = Random(100, 7);
  SwiGlu(gate.data(), up.data(), 100);
  SwiGluReference(ref.data(), up.data(), 100);
  for (size_t i = 0; i < gate.size(); ++i)
    ASSERT_NEAR(gate[i], ref[i], 1e-6f * (1 + std::fabs(ref[i])));
}

TEST(AddInPlaceTest, EachElementIsOneFloatAddAndNothingPastTheEnd) {
  // Sizes around the 16-lane vector (masked tails); the element past n stays untouched.
  for (int64_t n : {1, 15, 16, 17, 960, 4803}) {
    const std::vector<float> y = Random(n, 11, 3.0f);
    std::vector<float> x = Random(n + 1, 12);
    const std::vector<float> before = x;
    AddInPlace(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = before[i] + y[i];
      ASSERT_EQ(x[i], want) << "n " << n << " element " << i;
    }
    EXPECT_EQ(x[n], before[n]) << "n " << n;
  }
}

}  // namespace
}  // namespace tandem
