#include "core/model/safetensors_reader.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/gguf_reader.h"
#include "core/model/gguf_builder_test_util.h"
#include "core/model/safetensors_builder_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::F32Bytes;
using ::tandem::testing::SafetensorsBytes;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;

absl::StatusOr<SafetensorsFile> ParseBytes(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::Parse(MappedFile::FromBuffer(bytes, "t.safetensors"));
}

TEST(SafetensorsReaderTest, Stories260KFacts) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/hf/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, SafetensorsFile::Open(path));
  EXPECT_EQ(file.tensors().size(), 47u);
  EXPECT_EQ(file.data_offset(), 8u + 4856);
  EXPECT_THAT(file.metadata(), ElementsAre(Pair("format", "pt")));
  const SafetensorsTensorInfo* info = file.FindTensorInfo("model.embed_tokens.weight");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, "F32");
  EXPECT_THAT(info->shape, ElementsAre(512, 64));
  EXPECT_EQ(info->begin, 0u);
  EXPECT_EQ(info->end, 131072u);
  for (const SafetensorsTensorInfo& t : file.tensors()) {
    EXPECT_EQ(t.dtype, "F32") << t.name;
    EXPECT_OK(file.GetTensor(t.name).status());
  }
  EXPECT_EQ(file.FindTensorInfo("lm_head.weight"), nullptr);  // tied embeddings
}

// The HF weights are bit-exact copies of the GGUF's; ne order makes the shapes agree too.
TEST(SafetensorsReaderTest, EmbeddingEqualsTheGgufOne) {
  ASSERT_OK_AND_ASSIGN(std::string hf_dir, SharedFile("models/stories260K/hf"));
  ASSERT_OK_AND_ASSIGN(SafetensorsModel model, SafetensorsModel::Open(hf_dir));
  ASSERT_EQ(model.files().size(), 1u);
  EXPECT_EQ(model.TensorNames().size(), 47u);
  EXPECT_EQ(model.TensorNames().front(), "model.embed_tokens.weight");
  ASSERT_OK_AND_ASSIGN(TensorView hf, model.GetTensor("model.embed_tokens.weight"));
  EXPECT_EQ(hf.type, TensorType::kF32);
  EXPECT_THAT(hf.ne, ElementsAre(64, 512));
  EXPECT_EQ(hf.num_bytes, 131072u);

  ASSERT_OK_AND_ASSIGN(std::string gguf_path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Open(gguf_path));
  ASSERT_OK_AND_ASSIGN(TensorView native, gguf.GetTensor("token_embd.weight"));
  EXPECT_EQ(native.ne, hf.ne);
  EXPECT_EQ(std::memcmp(native.data, hf.data, hf.num_bytes), 0);
}

TEST(SafetensorsReaderTest, ReadsF16AndBf16AndRefusesOtherDtypesByName) {
  const std::vector<uint8_t> bytes = SafetensorsBytes(
      R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[4,8]},)"
      R"("i":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
      R"("f4":{"dtype":"F4","shape":[3],"data_offsets":[16,18]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[20,24]}})",
      std::string("\x00\x3C\x00\xC0\x80\x3F\x40\xC0", 8) + std::string(12, '\0') + F32Bytes({5}));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ParseBytes(bytes));
  ASSERT_OK_AND_ASSIGN(TensorView h, file.GetTensor("h"));
  EXPECT_EQ(h.type, TensorType::kF16);
  EXPECT_EQ(Fp16ToF32(static_cast<uint16_t>(h.data[2] | h.data[3] << 8)), -2.0f);
  ASSERT_OK_AND_ASSIGN(TensorView b, file.GetTensor("b"));
  EXPECT_EQ(b.type, TensorType::kBF16);
  EXPECT_THAT(b.ne, ElementsAre(2, 1));
  ASSERT_OK_AND_ASSIGN(TensorView s, file.GetTensor("s"));
  EXPECT_TRUE(s.ne.empty());
  EXPECT_EQ(s.num_elements, 1);
  EXPECT_THAT(file.GetTensor("i"), StatusIs(absl::StatusCode::kUnimplemented,
                                            AllOf(HasSubstr("'i'"), HasSubstr("I64"))));
  EXPECT_THAT(file.GetTensor("f4"), StatusIs(absl::StatusCode::kUnimplemented,
                                             AllOf(HasSubstr("'f4'"), HasSubstr("F4"))));
  EXPECT_THAT(file.GetTensor("nope"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

struct HostileCase {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* message;
};

std::vector<uint8_t> Header(absl::string_view json, size_t data_bytes = 16) {
  return SafetensorsBytes(json, std::string(data_bytes, '\0'));
}

TEST(SafetensorsReaderTest, HostileHeadersAreDataLossNamingTheCulprit) {
  std::vector<uint8_t> huge_length = Header("{}");
  huge_length[7] = 0x7F;
  std::vector<uint8_t> past_end = Header("{}", 0);
  past_end[0] = 3;
  const HostileCase cases[] = {
      {"empty", {}, "0 bytes is too short"},
      {"seven bytes", std::vector<uint8_t>(7, 0), "7 bytes is too short"},
      {"absurd header length", huge_length, "exceeds the limit"},
      {"header past end", past_end, "header length 3 runs past the end of the file (10 bytes)"},
      {"not json", Header("{\"a\": "), "header is not valid JSON"},
      {"not an object", Header("[1, 2]"), "header is not a JSON object"},
      {"metadata not object", Header(R"({"__metadata__": 3})"), "__metadata__ is not an object"},
      {"metadata value not string", Header(R"({"__metadata__": {"format": 1}})"),
       "__metadata__ 'format' is not a string"},
      {"entry not object", Header(R"({"w": [1]})"), "tensor 'w' is not an object"},
      {"no dtype", Header(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})"),
       "tensor 'w' has no string dtype"},
      {"dtype not string", Header(R"({"w": {"dtype": 0, "shape": [1], "data_offsets": [0, 4]}})"),
       "tensor 'w' has no string dtype"},
      {"no shape", Header(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})"),
       "tensor 'w' shape is missing or not an array"},
      {"negative dim", Header(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})"),
       "tensor 'w' shape holds -1, not a non-negative integer"},
      {"fractional dim",
       Header(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})"),
       "tensor 'w' shape holds 1.5"},
      {"huge dim", Header(R"({"w": {"dtype": "F32", "shape": [1e30], "data_offsets": [0, 4]}})"),
       "tensor 'w' shape holds"},
      {"offsets wrong length",
       Header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})"),
       "tensor 'w' data_offsets is not [begin, end]"},
      {"offsets reversed",
       Header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})"),
       "tensor 'w' data_offsets is not [begin, end] with begin <= end"},
      {"offsets past end",
       Header(R"({"w": {"dtype": "F32", "shape": [5], "data_offsets": [0, 20]}})"),
       "tensor 'w' data_offsets [0, 20] run past the end of the data (16 bytes)"},
      {"size disagrees with shape",
       Header(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}})"),
       "tensor 'w': 6 F32 elements do not take the 16 bytes of its data_offsets"},
      {"shape overflows",
       Header(
           R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})"),
       "tensor 'w' shape overflows the element count"},
      {"bytes overflow",
       Header(R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 0]}})"),
       "tensor 'w': 4611686018427387904 F64 elements do not take the 0 bytes"},
  };
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(ParseBytes(c.bytes),
                StatusIs(kDataLoss, AllOf(HasSubstr("t.safetensors: "), HasSubstr(c.message))));
  }
}

// Every strict prefix of a valid file is corrupt.
TEST(SafetensorsReaderTest, EveryTruncationIsDataLoss) {
  const std::vector<uint8_t> full = SafetensorsBytes(
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
      F32Bytes({1, 2}));
  ASSERT_OK(ParseBytes(full).status());
  for (size_t length = 0; length < full.size(); ++length) {
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + length);
    ASSERT_THAT(ParseBytes(prefix), StatusIs(kDataLoss)) << length;
  }
}

class ShardedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("safetensors_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    Write("model-00001-of-00002.safetensors",
          SafetensorsBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           F32Bytes({1})));
    Write("model-00002-of-00002.safetensors",
          SafetensorsBytes(R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                           F32Bytes({2, 3})));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  void WriteIndex(const std::string& text) {
    Write("model.safetensors.index.json", std::vector<uint8_t>(text.begin(), text.end()));
  }
  std::string IndexPath() const { return (dir_ / "model.safetensors.index.json").string(); }

  std::filesystem::path dir_;
};

TEST_F(ShardedModelTest, FindsEachTensorInItsShard) {
  WriteIndex(R"({"metadata": {"total_size": 12}, "weight_map": {
      "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  ASSERT_OK_AND_ASSIGN(SafetensorsModel model, SafetensorsModel::Open(dir_.string()));
  EXPECT_EQ(model.files().size(), 2u);
  EXPECT_THAT(model.TensorNames(), ElementsAre("a", "b"));
  ASSERT_OK_AND_ASSIGN(TensorView b, model.GetTensor("b"));
  float values[2];
  std::memcpy(values, b.data, sizeof(values));
  EXPECT_THAT(values, ElementsAre(2.0f, 3.0f));
  ASSERT_NE(model.FindTensorInfo("a"), nullptr);
  EXPECT_THAT(model.GetTensor("c"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("'c'")));
  ASSERT_OK_AND_ASSIGN(SafetensorsModel by_index, SafetensorsModel::Open(IndexPath()));
  EXPECT_EQ(by_index.files().size(), 2u);
}

TEST_F(ShardedModelTest, HostileIndexIsRefused) {
  struct Case {
    const char* index;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"{", kDataLoss, "not valid JSON"},
      {R"({"metadata": {}})", kDataLoss, "no weight_map object"},
      {R"({"weight_map": {"a": "../etc/passwd"}})", kDataLoss,
       "tensor 'a' maps to \"../etc/passwd\", not a file name beside the index"},
      {R"({"weight_map": {"a": 7}})", kDataLoss, "tensor 'a' maps to 7"},
      {R"({"weight_map": {"b": "model-00001-of-00002.safetensors"}})", kDataLoss,
       "tensor 'b' is not in its shard model-00001-of-00002.safetensors"},
      {R"({"weight_map": {"a": "missing.safetensors"}})", absl::StatusCode::kNotFound,
       "missing.safetensors"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.index);
    WriteIndex(c.index);
    EXPECT_THAT(SafetensorsModel::Open(dir_.string()), StatusIs(c.code, HasSubstr(c.message)));
  }
}

TEST_F(ShardedModelTest, DirectoryWithoutWeightsIsNotFound) {
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  EXPECT_THAT(SafetensorsModel::Open(dir_.string()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no model.safetensors")));
}

}  // namespace
}  // namespace tandem
