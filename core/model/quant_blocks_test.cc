// Hand-computed blocks of each quantized type, decoded through DequantizeRow (the scalar
// reference every kernel is checked against). Each case sets a few bytes of an otherwise
// zero block and checks elements whose value was worked out by hand from ggml's layout.
#include "core/model/quant_blocks.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/model/tensor_type.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct BlockCase {
  TensorType type;
  std::vector<std::pair<int, uint8_t>> bytes;   // (offset, value); the rest of the block is 0
  std::vector<std::pair<int, float>> expected;  // (element, value)
};

void PrintTo(const BlockCase& c, std::ostream* os) { *os << TensorTypeName(c.type); }

class HandComputedBlockTest : public ::testing::TestWithParam<BlockCase> {};

TEST_P(HandComputedBlockTest, DecodesToTheWorkedOutValues) {
  const BlockCase& c = GetParam();
  const TensorTypeTraits& traits = GetTraits(c.type);
  ASSERT_TRUE(traits.supported);
  std::vector<uint8_t> block(traits.bytes_per_block, 0);
  for (const auto& [offset, value] : c.bytes) block[offset] = value;
  std::vector<float> out(traits.block_size);
  ASSERT_OK(DequantizeRow(c.type, block, absl::MakeSpan(out)));
  for (const auto& [element, value] : c.expected) {
    EXPECT_EQ(out[element], value) << "element " << element;
  }
}

// f16 constants: 0x3C00 = 1, 0x3800 = 0.5, 0x4000 = 2, 0x3400 = 0.25, 0xBC00 = -1.
INSTANTIATE_TEST_SUITE_P(
    Types, HandComputedBlockTest,
    ::testing::Values(
        // Q4_1: d 0.5, m -1, byte 0 = 0xF0 -> element 0 nibble 0, element 16 nibble 15.
        BlockCase{TensorType::kQ4_1,
                  {{1, 0x38}, {3, 0xBC}, {4, 0xF0}, {19, 0x0F}},
                  {{0, -1.0f}, {16, 6.5f}, {15, 6.5f}, {31, -1.0f}, {1, -1.0f}}},
        // Q5_0: d 1, qh bits 0 and 31: element 0 = (15 | 16) - 16, element 31 = 16 - 16.
        BlockCase{TensorType::kQ5_0,
                  {{1, 0x3C}, {2, 0x01}, {5, 0x80}, {6, 0x0F}},
                  {{0, 15.0f}, {1, -16.0f}, {16, -16.0f}, {31, 0.0f}}},
        // Q5_1: d 2, m 0.5, qh bit 16: element 16 = (2 | 16) * 2 + 0.5.
        BlockCase{TensorType::kQ5_1,
                  {{1, 0x40}, {3, 0x38}, {6, 0x01}, {8, 0x21}},
                  {{0, 2.5f}, {16, 36.5f}, {1, 0.5f}, {17, 0.5f}}},
        // IQ4_NL: d 0.5, code book [0] = -127, [15] = 113, [8] = 1, [7] = -10.
        BlockCase{TensorType::kIQ4_NL,
                  {{1, 0x38}, {2, 0xF0}, {3, 0x78}},
                  {{0, -63.5f}, {16, 56.5f}, {1, 0.5f}, {17, -5.0f}, {2, -63.5f}}},
        // Q2_K: scales[is] = min << 4 | scale; d 1 (offset 80), dmin 0.5 (offset 82).
        // qs[0] = 0xE4 holds 0, 1, 2, 3 at shifts 0, 2, 4, 6.
        BlockCase{TensorType::kQ2_K,
                  {{0, 0x21},
                   {1, 0x03},
                   {2, 0x12},
                   {6, 0x01},
                   {8, 0x1F},
                   {16, 0xE4},
                   {32, 0x03},
                   {48, 0x02},
                   {81, 0x3C},
                   {83, 0x38}},
                  {{0, -1.0f},    // 0 * 1 - 0.5 * 2
                   {16, 9.0f},    // qs[16] = 3, scale 3
                   {32, 1.5f},    // shift 2: 1 * 2 - 0.5 * 1
                   {96, 3.0f},    // shift 6: 3 * 1
                   {128, 29.5f},  // second half, qs[32] = 2: 2 * 15 - 0.5 * 1
                   {1, -1.0f}}},
        // Q3_K: hmask at 0, qs at 32, scales at 96, d 0.5 at 108. Scale 0 = (1 | 2 << 4) - 32
        // = 1, scale 8 = (2 | 0 << 4) - 32 = -30, scale 1 = -32. A clear hmask bit subtracts 4.
        BlockCase{TensorType::kQ3_K,
                  {{0, 0x01}, {32, 0x03}, {64, 0x01}, {96, 0x21}, {104, 0x02}, {109, 0x38}},
                  {{0, 1.5f},      // 3 * 0.5 * 1
                   {1, -2.0f},     // (0 - 4) * 0.5
                   {16, 64.0f},    // (0 - 4) * 0.5 * -32
                   {128, 45.0f},   // second half: (1 - 4) * 0.5 * -30
                   {32, 64.0f}}},  // shift 2, hmask bit 1 clear, scale 2 = -32: -4 * -16
        // Q4_K: d 1, dmin 0.5, scales at 4: sub-block 0 scale 2 min 3, sub-block 1 scale 1 min
        // 0, sub-block 4 scale 1 | 1 << 4 = 17, min 5 | 2 << 4 = 37; qs at 16.
        BlockCase{TensorType::kQ4_K,
                  {{1, 0x3C},
                   {3, 0x38},
                   {4, 0x42},
                   {5, 0x01},
                   {8, 0x83},
                   {12, 0x51},
                   {16, 0x7A},
                   {80, 0x03}},
                  {{0, 18.5f},      // 10 * 2 - 0.5 * 3
                   {32, 7.0f},      // high nibble 7 * 1
                   {1, -1.5f},      // 0 * 2 - 1.5
                   {128, 32.5f}}},  // 3 * 17 - 0.5 * 37
        // Q5_K: as Q4_K with fifth bits at 16 (qh[0] = 0x05: element 0 and element 64) and
        // quants at 48; sub-block 2 scale 4.
        BlockCase{TensorType::kQ5_K,
                  {{1, 0x3C},
                   {3, 0x38},
                   {4, 0x42},
                   {5, 0x01},
                   {6, 0x04},
                   {8, 0x83},
                   {12, 0x51},
                   {16, 0x05},
                   {48, 0x7A},
                   {112, 0x03}},
                  {{0, 50.5f},      // (10 + 16) * 2 - 1.5
                   {32, 7.0f},      // bit 1 clear
                   {64, 64.0f},     // (0 + 16) * 4
                   {128, 32.5f}}},  // 3 * 17 - 18.5
        // Q6_K: ql at 0, qh at 128, int8 scales at 192, d 0.5 at 208. qh[0] = 0x1B gives
        // elements 0, 32, 64, 96 high bits 3, 2, 1, 0.
        BlockCase{TensorType::kQ6_K,
                  {{0, 0x5F},
                   {32, 0x1C},
                   {128, 0x1B},
                   {192, 2},
                   {194, 0xFF},
                   {196, 3},
                   {198, 1},
                   {200, 4},
                   {209, 0x38}},
                  {{0, 31.0f},       // (15 | 48) - 32 = 31, * 0.5 * 2
                   {32, -6.0f},      // (12 | 32) - 32 = 12, * 0.5 * -1
                   {64, -16.5f},     // (5 | 16) - 32 = -11, * 0.5 * 3
                   {96, -15.5f},     // 1 - 32, * 0.5 * 1
                   {128, -64.0f}}},  // second half: -32 * 0.5 * 4
        // IQ4_XS: d 0.25, scales_h 0x0006, scales_l[0] 0x21: sub-block 0 scale (1 | 2 << 4) - 32
        // = 1, sub-block 1 scale (2 | 1 << 4) - 32 = -14, the rest 0 - 32.
        BlockCase{TensorType::kIQ4_XS,
                  {{1, 0x34}, {2, 0x06}, {4, 0x21}, {8, 0xF0}, {24, 0x08}},
                  {{0, -31.75f},      // -127 * 0.25
                   {16, 28.25f},      // 113 * 0.25
                   {32, -3.5f},       // 1 * 0.25 * -14
                   {48, 444.5f},      // -127 * -3.5
                   {64, 1016.0f}}}),  // -127 * 0.25 * -32
    [](const ::testing::TestParamInfo<BlockCase>& info) {
      return std::string(TensorTypeName(info.param.type));
    });

TEST(KQuantScaleMinTest, LowFourSubBlocksAreSixBitsAndTheHighFourBorrowTopBits) {
  const uint8_t s[12] = {0x42, 0x01, 0, 0, 0x83, 0, 0, 0, 0x51, 0, 0, 0};
  int sc = -1, m = -1;
  KQuantScaleMin(s, 0, &sc, &m);
  EXPECT_EQ(sc, 2);
  EXPECT_EQ(m, 3);
  KQuantScaleMin(s, 4, &sc, &m);
  EXPECT_EQ(sc, 17);
  EXPECT_EQ(m, 37);
  EXPECT_EQ(Q3KScale(s, 0), -14);  // (0x42 & 0xF | (0x51 & 3) << 4) - 32
}

}  // namespace
}  // namespace tandem
