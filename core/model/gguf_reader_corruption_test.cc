// Hostile and corrupt GGUF inputs: every one must give an exact error code, never a crash
// or an out-of-bounds read (run these under ASan too).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/gguf_reader.h"
#include "core/model/gguf_builder_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::F32Bytes;
using ::tandem::testing::GgufBuilder;
using ::tandem::testing::GgufStringBytes;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::tandem::testing::U32Bytes;
using ::tandem::testing::U64Bytes;
using ::testing::HasSubstr;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;
constexpr absl::StatusCode kUnimplemented = absl::StatusCode::kUnimplemented;
constexpr absl::StatusCode kInvalidArgument = absl::StatusCode::kInvalidArgument;
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;
constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint32_t kTypeUint32 = 4;

absl::Status ParseBytes(const std::vector<uint8_t>& bytes) {
  // An exact-size heap copy, so ASan sees any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), copy.get());
  return GgufFile::Parse(MappedFile::FromBuffer({copy.get(), bytes.size()})).status();
}

std::vector<uint8_t> Raw(absl::string_view text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

// A valid file with one F32 tensor of `n` zeros at data offset 0.
GgufBuilder OneTensor(int64_t n = 4) {
  GgufBuilder builder;
  builder.AddString("general.architecture", "llama")
      .AddTensor("w", TensorType::kF32, {n}, std::string(4 * n, '\0'));
  return builder;
}

struct CorruptionCase {
  const char* name;
  std::vector<uint8_t> bytes;
  absl::StatusCode code;
  const char* message;  // a substring of the error message
};

std::vector<CorruptionCase> Cases() {
  const uint64_t kHuge = uint64_t{1} << 62;
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return {
      {"empty file", {}, kDataLoss, "0 bytes is too short"},
      {"two bytes", Raw("GG"), kDataLoss, "too short"},
      {"bad magic", GgufBuilder().SetMagic(0x4C4D4747).Build(), kInvalidArgument,
       "not a GGUF file: magic is 0x4c4d4747"},
      {"magic only", Raw("GGUF"), kDataLoss, "truncated at offset 4: version"},
      {"version 1", GgufBuilder().SetVersion(1).Build(), kUnimplemented, "version 1"},
      {"version 0", GgufBuilder().SetVersion(0).Build(), kDataLoss, "version 0"},
      {"version 4", GgufBuilder().SetVersion(4).Build(), kUnimplemented, "version 4"},
      {"big-endian", GgufBuilder().SetVersion(0x03000000).Build(), kUnimplemented, "big-endian"},
      {"absurd metadata count",
       GgufBuilder().AddUint32("k", 1).OverrideMetadataCount(kHuge).Build(), kDataLoss,
       "metadata count 4611686018427387904"},
      {"absurd tensor count", OneTensor().OverrideTensorCount(kMax).Build(), kDataLoss,
       "tensor count 18446744073709551615"},
      {"metadata count one too many",
       GgufBuilder().AddUint32("a", 1).AddUint32("b", 2).OverrideMetadataCount(3).Build(),
       kDataLoss, "metadata count 3"},
      {"key length past end",
       [&] {
         std::vector<uint8_t> b = GgufBuilder().AddUint32("k", 1).Build();
         const std::string len = U64Bytes(1000);
         std::copy(len.begin(), len.end(), b.begin() + 24);
         return b;
       }(),
       kDataLoss, "key of metadata entry 0 at offset 24 claims 1000 bytes"},
      {"string value length past end",
       GgufBuilder().AddRaw("s", kTypeString, U64Bytes(kMax)).Build(), kDataLoss,
       "metadata 's' at offset 37 claims 18446744073709551615 bytes"},
      {"unknown value type", GgufBuilder().AddRaw("k", 13, U32Bytes(0)).Build(), kDataLoss,
       "metadata 'k' at offset 24 has unknown value type 13"},
      {"array of unknown type",
       GgufBuilder().AddRaw("k", kTypeArray, U32Bytes(99) + U64Bytes(0)).Build(), kDataLoss,
       "metadata 'k' at offset 24 is an array of unknown value type 99"},
      {"array count past end",
       GgufBuilder().AddRaw("k", kTypeArray, U32Bytes(kTypeUint32) + U64Bytes(kHuge)).Build(),
       kDataLoss, "metadata 'k' at offset 24 claims 4611686018427387904 elements"},
      {"string array shorter than its count",
       GgufBuilder()
           .AddRaw(
               "k", kTypeArray,
               U32Bytes(kTypeString) + U64Bytes(3) + GgufStringBytes("a") + GgufStringBytes("b"))
           .Build(),
       kDataLoss, "metadata 'k' at offset 24 claims 3 elements, only 18 bytes left"},
      {"string array element past end",
       GgufBuilder()
           .AddRaw("k", kTypeArray,
                   U32Bytes(kTypeString) + U64Bytes(2) + GgufStringBytes("a") + U64Bytes(100) +
                       std::string(8, 'x'))
           .Build(),
       kDataLoss, "metadata 'k' element 1 at offset"},
      {"array of arrays",
       GgufBuilder().AddRaw("k", kTypeArray, U32Bytes(kTypeArray) + U64Bytes(0)).Build(),
       kUnimplemented, "array of arrays"},
      {"bool value 2", GgufBuilder().AddRaw("flag", 7, std::string(1, '\2')).Build(), kDataLoss,
       "metadata 'flag' at offset 24 has bool value 2"},
      {"bool array value 3",
       GgufBuilder().AddRaw("flags", kTypeArray, U32Bytes(7) + U64Bytes(2) + "\1\3").Build(),
       kDataLoss, "metadata 'flags' element 1 has bool value 3"},
      {"truncated scalar", GgufBuilder().AddRaw("k", kTypeUint32, "\1\2").Build(), kDataLoss,
       "truncated at offset 37: metadata 'k' needs 4 bytes, 2 left"},
      {"duplicate key", GgufBuilder().AddUint32("k", 1).AddUint32("k", 2).Build(), kDataLoss,
       "duplicate metadata 'k' at offset 41"},
      {"alignment 0", GgufBuilder().AddUint32("general.alignment", 0).Build(), kDataLoss,
       "general.alignment 0 is not a power of two"},
      {"alignment 48", GgufBuilder().AddUint32("general.alignment", 48).Build(), kDataLoss,
       "general.alignment 48 is not a power of two"},
      {"alignment of wrong type", GgufBuilder().AddString("general.alignment", "32").Build(),
       kDataLoss, "general.alignment has type string, want uint32"},
      {"alignment as uint64", GgufBuilder().AddUint64("general.alignment", 32).Build(), kDataLoss,
       "general.alignment has type uint64"},
      {"five dimensions", GgufBuilder().AddTensorInfo("w", kF32, {1, 1, 1, 1, 1}, 0).Build(),
       kDataLoss, "tensor 'w' at offset 24 has 5 dimensions (at most 4)"},
      {"absurd dimension count",
       GgufBuilder()
           .AddRawTensorInfo(GgufStringBytes("w") + U32Bytes(0xFFFFFFFF) + std::string(16, '\0'))
           .Build(),
       kDataLoss, "tensor 'w' at offset 24 has 4294967295 dimensions"},
      {"dimension above int64", GgufBuilder().AddTensorInfo("w", kF32, {kMax}, 0).Build(),
       kDataLoss, "tensor 'w' at offset 24: dimension 0 (18446744073709551615)"},
      {"element count overflows",
       GgufBuilder().AddTensorInfo("w", kF32, {uint64_t{1} << 32, uint64_t{1} << 32}, 0).Build(),
       kDataLoss, "dimension 1 (4294967296) makes the element count overflow"},
      {"byte size overflows",
       GgufBuilder().AddTensorInfo("w", kF32, {uint64_t{1} << 40, uint64_t{1} << 22}, 0).Build(),
       kDataLoss, "tensor 'w' at offset 24: byte size overflows"},
      {"unknown tensor type", GgufBuilder().AddTensorInfo("w", 99, {4}, 0).Build(), kUnimplemented,
       "tensor 'w' at offset 24 has unknown ggml type id 99"},
      {"removed tensor type", GgufBuilder().AddTensorInfo("w", 4, {4}, 0).Build(), kUnimplemented,
       "unknown ggml type id 4"},
      {"row not whole blocks",
       GgufBuilder().AddTensorInfo("w", kQ8_0, {33}, 0).AppendData(std::string(68, '\0')).Build(),
       kDataLoss, "tensor 'w' at offset 24: row of 33 elements is not a whole number of Q8_0"},
      {"misaligned offset",
       GgufBuilder().AddTensorInfo("w", kF32, {4}, 16).AppendData(std::string(64, '\0')).Build(),
       kDataLoss, "tensor 'w' has data offset 16, not a multiple of the alignment 32"},
      {"data past end",
       GgufBuilder().AddTensorInfo("w", kF32, {4}, 32).AppendData(std::string(40, '\0')).Build(),
       kDataLoss, "tensor 'w' (16 bytes at data offset 32) runs past the end of the file"},
      {"data offset near 2^64",
       GgufBuilder()
           .AddTensorInfo("w", kF32, {4}, kMax - 31)
           .AppendData(std::string(16, '\0'))
           .Build(),
       kDataLoss, "runs past the end of the file"},
      {"no data section at all", GgufBuilder().AddTensorInfo("w", kF32, {1}, 0).Build(), kDataLoss,
       "tensor 'w' (4 bytes at data offset 0) runs past the end"},
      {"duplicate tensor",
       GgufBuilder()
           .AddTensor("w", TensorType::kF32, {1}, F32Bytes({1}))
           .AddTensor("w", TensorType::kF32, {1}, F32Bytes({2}))
           .Build(),
       kDataLoss, "duplicate tensor 'w'"},
      {"tensor name past end",
       GgufBuilder().AddRawTensorInfo(U64Bytes(500) + std::string(16, 'x')).Build(), kDataLoss,
       "name of tensor 0 at offset 24 claims 500 bytes"},
  };
}

TEST(GgufCorruptionTest, EachCorruptionGivesItsExactError) {
  for (const CorruptionCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(ParseBytes(c.bytes), StatusIs(c.code, HasSubstr(c.message)));
  }
}

TEST(GgufCorruptionTest, ErrorsNameTheFile) {
  const std::vector<uint8_t> bytes = GgufBuilder().SetVersion(1).Build();
  EXPECT_THAT(GgufFile::Parse(MappedFile::FromBuffer(bytes, "draft.gguf")).status(),
              StatusIs(kUnimplemented, HasSubstr("draft.gguf: GGUF version 1")));
}

TEST(GgufCorruptionTest, EveryTruncationOfABuiltFileIsDataLoss) {
  const std::vector<uint8_t> full =
      GgufBuilder()
          .AddString("general.architecture", "llama")
          .AddUint32("general.alignment", 32)
          .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "hello"})
          .AddFloat32Array("tokenizer.ggml.scores", {0, -1, -2})
          .AddBool("b", true)
          .AddTensor("a", TensorType::kF32, {3}, F32Bytes({1, 2, 3}))
          .AddTensor("q", TensorType::kQ8_0, {32, 2}, std::string(68, '\1'))
          .Build();
  ASSERT_OK(ParseBytes(full));
  for (size_t length = 0; length < full.size(); ++length) {
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + length);
    ASSERT_THAT(ParseBytes(prefix), StatusIs(kDataLoss)) << "length " << length;
  }
}

// Truncating the real model anywhere up to its data section (14176) is data loss.
TEST(GgufCorruptionTest, EveryTruncationOfStories260KHeaderIsDataLoss) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  for (size_t length = 0; length <= 14176; ++length) {
    const std::vector<uint8_t> prefix(file.data(), file.data() + length);
    ASSERT_THAT(ParseBytes(prefix), StatusIs(kDataLoss)) << "length " << length;
  }
}

}  // namespace
}  // namespace tandem
