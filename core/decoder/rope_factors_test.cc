// Llama3RopeFactors against the factors convert_hf_to_gguf.py wrote into the shared llama3
// fixture (Llama-3.1 settings: factor 8, low 1, high 4, original context 8192, base 5e5).
#include "core/decoder/rope_factors.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/gguf_reader.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(Llama3RopeFactorsTest, EqualTheConvertersRopeFreqsTensor) {
  ASSERT_OK_AND_ASSIGN(std::string path, testing::SharedFile("models/fixtures/llama3-F16.gguf"));
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Open(path));
  ASSERT_OK_AND_ASSIGN(TensorView t, gguf.GetTensor("rope_freqs.weight"));
  ASSERT_EQ(t.type, TensorType::kF32);
  ASSERT_EQ(t.num_elements, 32);
  std::vector<float> expected(32);
  std::memcpy(expected.data(), t.data, sizeof(float) * 32);
  const std::vector<float> factors = Llama3RopeFactors(64, 500000.0f, Llama3RopeScaling{});
  ASSERT_EQ(factors.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    // The README allows 1 ulp between numpy and torch in the interpolated entries.
    EXPECT_NEAR(factors[i], expected[i], 2e-7 * expected[i]) << i;
  }
  EXPECT_EQ(factors.front(), 1.0f);  // short wavelengths keep their frequency
  EXPECT_EQ(factors.back(), 8.0f);   // long ones are divided by `factor`
}

TEST(Llama3RopeFactorsTest, BlendBetweenTheWavelengthBounds) {
  // Base 1e4, rot_dim 8: wavelengths 2π·1e4^(i/8) = 6.3, 62.8, 628, 6283 against bounds
  // 1024/4 = 256 and 1024/1 = 1024: 1, 1, a blend, factor.
  const Llama3RopeScaling s{4.0, 1.0, 4.0, 1024};
  const std::vector<float> f = Llama3RopeFactors(8, 10000.0f, s);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f);
  const double wavelen = 2 * M_PI * 100.0;
  const double smooth = (1024 / wavelen - 1.0) / 3.0;
  EXPECT_NEAR(f[2], 1.0 / ((1 - smooth) / 4.0 + smooth), 1e-6);
  EXPECT_EQ(f[3], 4.0f);
}

}  // namespace
}  // namespace tandem
