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

TEST(VectorOpsTest, DotsMatchTheReferenceOnOddSizes) {
  for (int64_t n : {1, 7, 8, 15, 16, 17, 64, 100, 128, 257}) {
    const Inputs in = Make(n, static_cast<uint32_t>(n));
    const float tolerance = 1e-5f * n;
    EXPECT_NEAR(DotF32(in.a.data(), in.f32.data(), n),
                reference::DotF32(in.a.data(), in.f32.data(), n), tolerance)
        << n;
    EXPECT_NEAR(DotF16(in.a.data(), in.f16.data(), n),
                reference::DotF16(in.a.data(), in.f16.data(), n), tolerance)
        << n;
    EXPECT_NEAR(DotI8(in.a.data(), in.i8.data(), n), reference::DotI8(in.a.data(), in.i8.data(), n),
                100 * tolerance)
        << n;
  }
}

TEST(VectorOpsTest, AxpysMatchTheReferenceAndTouchOnlyNElements) {
  for (int64_t n : {1, 9, 16, 33, 64}) {
    const Inputs in = Make(n + 4, 3);
    std::vector<float> fast = in.out, ref = in.out;
    AxpyF32(0.5f, in.f32.data(), fast.data(), n);
    reference::AxpyF32(0.5f, in.f32.data(), ref.data(), n);
    AxpyF16(-1.5f, in.f16.data(), fast.data(), n);
    reference::AxpyF16(-1.5f, in.f16.data(), ref.data(), n);
    AxpyI8(0.01f, in.i8.data(), fast.data(), n);
    reference::AxpyI8(0.01f, in.i8.data(), ref.data(), n);
    for (int64_t i = 0; i < n + 4; ++i) EXPECT_NEAR(fast[i], ref[i], 1e-5f) << n << " " << i;
    for (int64_t i = n; i < n + 4; ++i) EXPECT_EQ(fast[i], in.out[i]);  // tail untouched
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
