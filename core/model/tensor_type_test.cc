#include "core/model/tensor_type.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct LayoutCase {
  uint32_t id;
  const char* name;
  int64_t block_size;
  int64_t bytes_per_block;
  bool supported;
};

TEST(TensorTypeTest, KnowsGgmlIdsNamesAndBlockLayouts) {
  const LayoutCase cases[] = {
      {0, "F32", 1, 4, true},         {1, "F16", 1, 2, true},       {2, "Q4_0", 32, 18, true},
      {8, "Q8_0", 32, 34, true},      {30, "BF16", 1, 2, true},     {3, "Q4_1", 32, 20, true},
      {12, "Q4_K", 256, 144, true},   {14, "Q6_K", 256, 210, true}, {15, "Q8_K", 256, 292, false},
      {23, "IQ4_XS", 256, 136, true}, {28, "F64", 1, 8, false},     {39, "MXFP4", 32, 17, false},
  };
  for (const LayoutCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<TensorTypeTraits> traits = TensorTypeFromId(c.id);
    ASSERT_TRUE(traits.has_value());
    EXPECT_EQ(static_cast<uint32_t>(traits->type), c.id);
    EXPECT_EQ(traits->name, c.name);
    EXPECT_EQ(traits->block_size, c.block_size);
    EXPECT_EQ(traits->bytes_per_block, c.bytes_per_block);
    EXPECT_EQ(traits->supported, c.supported);
  }
}

TEST(TensorTypeTest, RemovedAndUndefinedIdsAreUnknown) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(TensorTypeFromId(id).has_value()) << id;
  }
}

TEST(TensorTypeTest, UnsupportedTypeIsUnimplementedNamingTensorAndType) {
  EXPECT_THAT(CheckSupported(TensorType::kIQ2_XXS, "blk.0.ffn_down.weight"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("blk.0.ffn_down.weight"), HasSubstr("IQ2_XXS"))));
  EXPECT_OK(CheckSupported(TensorType::kQ8_0, "x"));
}

TEST(TensorTypeTest, RowBytesCountsWholeBlocks) {
  EXPECT_THAT(RowBytes(TensorType::kF32, 64), IsOkAndHolds(256));
  EXPECT_THAT(RowBytes(TensorType::kF16, 172), IsOkAndHolds(344));
  EXPECT_THAT(RowBytes(TensorType::kQ8_0, 64), IsOkAndHolds(68));
  EXPECT_THAT(RowBytes(TensorType::kQ4_0, 96), IsOkAndHolds(54));
  EXPECT_THAT(RowBytes(TensorType::kQ4_K, 512), IsOkAndHolds(288));
  EXPECT_THAT(RowBytes(TensorType::kQ8_0, 172),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Q8_0")));
  EXPECT_THAT(RowBytes(TensorType::kF32, -1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RowBytes(TensorType::kF64, std::numeric_limits<int64_t>::max()),
              StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(Fp16Test, ConvertsHandComputedHalvesExactly) {
  struct Case {
    uint16_t half;
    float value;
  };
  const Case cases[] = {
      {0x0000, 0.0f},
      {0x3C00, 1.0f},
      {0xC000, -2.0f},
      {0x3800, 0.5f},
      {0x3555, 0.333251953125f},
      {0x7BFF, 65504.0f},
      {0x0400, 6.103515625e-05f},         // 2^-14, smallest normal
      {0x0001, 5.9604644775390625e-08f},  // 2^-24, smallest subnormal
      {0x03FF, 6.097555160522461e-05f},   // largest subnormal, 1023 * 2^-24
      {0x7C00, std::numeric_limits<float>::infinity()},
      {0xFC00, -std::numeric_limits<float>::infinity()},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Fp16ToF32(c.half), c.value) << std::hex << c.half;
  }
  EXPECT_TRUE(std::signbit(Fp16ToF32(0x8000)));
  EXPECT_TRUE(std::isnan(Fp16ToF32(0x7E00)));
  EXPECT_TRUE(std::isnan(Fp16ToF32(0x7C01)));
}

TEST(Bf16Test, IsTheTopHalfOfAFloat) {
  EXPECT_EQ(Bf16ToF32(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToF32(0xC040), -3.0f);
  EXPECT_EQ(Bf16ToF32(0x3E20), 0.15625f);
  EXPECT_EQ(Bf16ToF32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToF32(0x7FC0)));
}

TEST(F32ToFp16Test, RoundsToNearestEven) {
  struct Case {
    float value;
    uint16_t half;
  };
  const float tiny = 5.9604644775390625e-08f;  // 2^-24
  const Case cases[] = {
      {1.0f, 0x3C00},
      {-2.0f, 0xC000},
      {1.0f + 1.0f / 2048, 0x3C00},                 // halfway between 1 and 1+2^-10: to even (1)
      {1.0f + 3.0f / 2048, 0x3C02},                 // halfway between 1+2^-10 and 1+2^-9: to even
      {1.0f + 1.0f / 2048 + 1.0f / 65536, 0x3C01},  // just above halfway: up
      {65504.0f, 0x7BFF},
      {65519.0f, 0x7BFF},  // below the halfway point 65520
      {65520.0f, 0x7C00},  // halfway to 2^16: ties to even = infinity
      {1e10f, 0x7C00},
      {-1e10f, 0xFC00},
      {tiny, 0x0001},
      {tiny / 2, 0x0000},     // halfway between 0 and 2^-24: to even (0)
      {tiny * 1.5f, 0x0002},  // halfway between 1 and 2 units: to even (2)
      {tiny * 2.5f, 0x0002},  // halfway between 2 and 3 units: to even (2)
      {tiny * 0.75f, 0x0001},
      {6.103515625e-05f, 0x0400},        // 2^-14
      {6.097555160522461e-05f, 0x03FF},  // largest subnormal
      {1e-30f, 0x0000},
      {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7C00},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(F32ToFp16(c.value), c.half) << c.value;
  }
  const uint16_t nan = F32ToFp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(F32ToFp16Test, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = Fp16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToFp16(f), h) << std::hex << h;
  }
}

std::vector<uint8_t> Bytes(std::initializer_list<int> values) {
  std::vector<uint8_t> bytes;
  for (int v : values) bytes.push_back(static_cast<uint8_t>(v));
  return bytes;
}

TEST(DequantizeRowTest, Q8_0MultipliesInt8ByBlockScale) {
  // d = 0.5 (fp16 0x3800), then 32 int8 quants.
  std::vector<uint8_t> block = Bytes({0x00, 0x38});
  for (int i = 0; i < 32; ++i) block.push_back(static_cast<uint8_t>(static_cast<int8_t>(i - 16)));
  block[2] = static_cast<uint8_t>(int8_t{-128});
  block[3] = 127;
  std::vector<float> out(32);
  ASSERT_OK(DequantizeRow(TensorType::kQ8_0, block, absl::MakeSpan(out)));
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[1], 63.5f);
  EXPECT_EQ(out[2], -7.0f);  // (2 - 16) * 0.5
  EXPECT_EQ(out[16], 0.0f);
  EXPECT_EQ(out[31], 7.5f);
}

TEST(DequantizeRowTest, Q4_0LowNibblesFirstThenHighNibbles) {
  // Two blocks: d = 2 (0x4000) and d = -0.25 (0xB400).
  std::vector<uint8_t> row = Bytes({0x00, 0x40});
  for (int j = 0; j < 16; ++j) row.push_back(static_cast<uint8_t>((15 - j) << 4 | j));
  const std::vector<uint8_t> second =
      Bytes({0x00, 0xB4, 0x8F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08});
  row.insert(row.end(), second.begin(), second.end());
  std::vector<float> out(64);
  ASSERT_OK(DequantizeRow(TensorType::kQ4_0, row, absl::MakeSpan(out)));
  EXPECT_EQ(out[0], -16.0f);   // low nibble 0 -> (0 - 8) * 2
  EXPECT_EQ(out[15], 14.0f);   // low nibble 15
  EXPECT_EQ(out[16], 14.0f);   // high nibble of byte 0 is 15
  EXPECT_EQ(out[31], -16.0f);  // high nibble of byte 15 is 0
  EXPECT_EQ(out[32], -1.75f);  // low nibble 0xF: 7 * -0.25
  EXPECT_EQ(out[48], 0.0f);    // high nibble 8: 0
  EXPECT_EQ(out[33], 2.0f);    // low nibble 0: -8 * -0.25
  EXPECT_EQ(out[47], 0.0f);    // byte 15 = 0x08, low nibble 8
  EXPECT_EQ(out[63], 2.0f);    // byte 15 high nibble 0
}

TEST(DequantizeRowTest, PlainFloatTypes) {
  std::vector<float> out(2);
  ASSERT_OK(DequantizeRow(TensorType::kF16, Bytes({0x00, 0x3C, 0x00, 0xC0}), absl::MakeSpan(out)));
  EXPECT_THAT(out, ElementsAre(1.0f, -2.0f));
  ASSERT_OK(DequantizeRow(TensorType::kBF16, Bytes({0x80, 0x3F, 0x40, 0xC0}), absl::MakeSpan(out)));
  EXPECT_THAT(out, ElementsAre(1.0f, -3.0f));
  ASSERT_OK(DequantizeRow(TensorType::kF32, Bytes({0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0}),
                          absl::MakeSpan(out)));
  EXPECT_THAT(out, ElementsAre(1.0f, -2.0f));
}

TEST(DequantizeRowTest, RefusesWrongSizesAndUnsupportedTypes) {
  std::vector<float> out(32);
  const std::vector<uint8_t> short_block(33);
  EXPECT_THAT(DequantizeRow(TensorType::kQ8_0, short_block, absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("34 bytes, got 33")));
  std::vector<float> odd(31);
  EXPECT_THAT(DequantizeRow(TensorType::kQ8_0, std::vector<uint8_t>(34), absl::MakeSpan(odd)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<float> k_row(256);
  EXPECT_THAT(DequantizeRow(TensorType::kIQ2_XXS, std::vector<uint8_t>(66), absl::MakeSpan(k_row)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("IQ2_XXS")));
}

TEST(DequantizeRowTest, SupportedBitMatchesTheDequantiser) {
  for (uint32_t id = 0; id < 64; ++id) {
    const std::optional<TensorTypeTraits> traits = TensorTypeFromId(id);
    if (!traits) continue;
    std::vector<float> out(static_cast<size_t>(traits->block_size));
    std::vector<uint8_t> block(static_cast<size_t>(traits->bytes_per_block));
    const absl::Status status = DequantizeRow(traits->type, block, absl::MakeSpan(out));
    EXPECT_EQ(status.ok(), traits->supported) << traits->name << ": " << status;
  }
}

}  // namespace
}  // namespace tandem
