// GgufFile on the shared model files (exact known facts) and on builder-made files.
#include "core/model/gguf_reader.h"

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/gguf_builder_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::F32Bytes;
using ::tandem::testing::GgufBuilder;
using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<GgufFile> OpenShared(const std::string& relative) {
  ASSIGN_OR_RETURN(std::string path, SharedFile("models/" + relative));
  return GgufFile::Open(path);
}

std::map<TensorType, int> CountTypes(const GgufFile& gguf) {
  std::map<TensorType, int> counts;
  for (const GgufTensorInfo& info : gguf.tensors()) ++counts[info.type];
  return counts;
}

TEST(GgufReaderTest, Stories260KHeaderFacts) {
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, OpenShared("stories260K/stories260K.gguf"));
  EXPECT_EQ(gguf.version(), 3u);
  EXPECT_EQ(gguf.tensors().size(), 48u);
  EXPECT_EQ(gguf.metadata().size(), 19u);
  EXPECT_EQ(gguf.alignment(), 32u);
  EXPECT_EQ(gguf.data_offset(), 14176u);
  EXPECT_THAT(gguf.GetString("general.architecture"), IsOkAndHolds("llama"));
  EXPECT_THAT(gguf.GetUint32("llama.embedding_length"), IsOkAndHolds(64u));
  EXPECT_THAT(gguf.GetUint32("llama.block_count"), IsOkAndHolds(5u));
  EXPECT_THAT(gguf.GetUint32("llama.attention.head_count"), IsOkAndHolds(8u));
  EXPECT_THAT(gguf.GetUint32("llama.attention.head_count_kv"), IsOkAndHolds(4u));
  EXPECT_THAT(gguf.GetUint32("llama.feed_forward_length"), IsOkAndHolds(172u));
  EXPECT_THAT(gguf.GetUint32("llama.context_length"), IsOkAndHolds(2048u));
  EXPECT_THAT(gguf.GetFloat32("llama.attention.layer_norm_rms_epsilon"), IsOkAndHolds(1e-5f));
  EXPECT_THAT(gguf.GetString("tokenizer.ggml.model"), IsOkAndHolds("llama"));
  EXPECT_FALSE(gguf.HasKey("tokenizer.ggml.pre"));
  EXPECT_EQ(CountTypes(gguf), (std::map<TensorType, int>{{TensorType::kF32, 48}}));
}

TEST(GgufReaderTest, Stories260KTokenizerArrays) {
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, OpenShared("stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(absl::Span<const absl::string_view> tokens,
                       gguf.GetStringArray("tokenizer.ggml.tokens"));
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  ASSERT_OK_AND_ASSIGN(std::vector<float> scores, gguf.GetFloat32Array("tokenizer.ggml.scores"));
  ASSERT_EQ(scores.size(), 512u);
  EXPECT_EQ(scores[259], 0.0f);
  EXPECT_EQ(scores[511], -252.0f);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> types, gguf.GetInt32Array("tokenizer.ggml.token_type"));
  ASSERT_EQ(types.size(), 512u);
  std::map<int32_t, int> type_counts;
  for (int32_t t : types) ++type_counts[t];
  // 1 unknown (2), 2 control (3), 256 byte (6), 253 normal (1).
  EXPECT_EQ(type_counts, (std::map<int32_t, int>{{1, 253}, {2, 1}, {3, 2}, {6, 256}}));
}

TEST(GgufReaderTest, Stories260KTensorViews) {
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, OpenShared("stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(TensorView embd, gguf.GetTensor("token_embd.weight"));
  EXPECT_EQ(embd.type, TensorType::kF32);
  EXPECT_THAT(embd.ne, ElementsAre(64, 512));
  EXPECT_EQ(embd.num_elements, 64 * 512);
  EXPECT_EQ(embd.num_bytes, 64u * 512 * 4);
  EXPECT_EQ(embd.row_length(), 64);
  EXPECT_EQ(embd.num_rows(), 512);
  ASSERT_OK_AND_ASSIGN(TensorView output, gguf.GetTensor("output.weight"));
  // The classifier is tied: bit-identical to the embedding.
  ASSERT_EQ(output.num_bytes, embd.num_bytes);
  EXPECT_EQ(std::memcmp(output.data, embd.data, embd.num_bytes), 0);
  ASSERT_OK_AND_ASSIGN(TensorView k, gguf.GetTensor("blk.0.attn_k.weight"));
  EXPECT_THAT(k.ne, ElementsAre(64, 32));
  ASSERT_OK_AND_ASSIGN(TensorView down, gguf.GetTensor("blk.4.ffn_down.weight"));
  EXPECT_THAT(down.ne, ElementsAre(172, 64));
  ASSERT_OK_AND_ASSIGN(TensorView norm, gguf.GetTensor("output_norm.weight"));
  EXPECT_THAT(norm.ne, ElementsAre(64));
  // Views point into the map, aligned as the file promises.
  for (const GgufTensorInfo& info : gguf.tensors()) {
    ASSERT_OK_AND_ASSIGN(TensorView view, gguf.GetTensor(info.name));
    EXPECT_EQ((gguf.data_offset() + info.offset) % 32, 0u) << info.name;
  }
  EXPECT_THAT(gguf.GetTensor("blk.5.attn_q.weight"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("blk.5.attn_q.weight")));
}

struct SharedFileCase {
  const char* path;
  size_t tensors;
  std::map<TensorType, int> types;
  const char* tokenizer_model;
  size_t vocab;
};

TEST(GgufReaderTest, EverySharedGgufParses) {
  using T = TensorType;
  const SharedFileCase cases[] = {
      {"stories260K/stories260K.gguf", 48, {{T::kF32, 48}}, "llama", 512},
      {"stories260K/derived/stories260K-Q8_0.gguf",
       48,
       {{T::kQ8_0, 32}, {T::kF16, 5}, {T::kF32, 11}},
       "llama",
       512},
      {"stories260K/derived/stories260K-Q4_0.gguf",
       48,
       {{T::kQ4_0, 32}, {T::kF16, 5}, {T::kF32, 11}},
       "llama",
       512},
      {"stories260K/derived/stories260K-first4layers.gguf", 39, {{T::kF32, 39}}, "llama", 512},
      {"stories260K/derived/stories-draft-distilled.gguf", 39, {{T::kF32, 39}}, "llama", 512},
      {"llama-2-tiny-random/llama-2-tiny-random.gguf",
       12,
       {{T::kF16, 9}, {T::kF32, 3}},
       "llama",
       32000},
      {"vocab/ggml-vocab-llama-spm.gguf", 0, {}, "llama", 32000},
      {"vocab/ggml-vocab-baichuan.gguf", 0, {}, "llama", 64000},
      {"vocab/ggml-vocab-gpt-2.gguf", 0, {}, "gpt2", 50257},
      {"vocab/ggml-vocab-gpt-neox.gguf", 0, {}, "gpt2", 50432},
      {"vocab/ggml-vocab-mpt.gguf", 0, {}, "gpt2", 50432},
      {"vocab/ggml-vocab-falcon.gguf", 0, {}, "gpt2", 65024},
      {"vocab/ggml-vocab-starcoder.gguf", 0, {}, "gpt2", 49152},
      {"vocab/ggml-vocab-deepseek-coder.gguf", 0, {}, "gpt2", 32256},
      {"vocab/ggml-vocab-deepseek-llm.gguf", 0, {}, "gpt2", 102400},
      {"vocab/ggml-vocab-bert-bge.gguf", 0, {}, "bert", 30522},
  };
  for (const SharedFileCase& c : cases) {
    SCOPED_TRACE(c.path);
    ASSERT_OK_AND_ASSIGN(GgufFile gguf, OpenShared(c.path));
    EXPECT_EQ(gguf.version(), 3u);
    EXPECT_EQ(gguf.tensors().size(), c.tensors);
    EXPECT_EQ(CountTypes(gguf), c.types);
    EXPECT_THAT(gguf.GetString("tokenizer.ggml.model"), IsOkAndHolds(c.tokenizer_model));
    ASSERT_OK_AND_ASSIGN(absl::Span<const absl::string_view> tokens,
                         gguf.GetStringArray("tokenizer.ggml.tokens"));
    EXPECT_EQ(tokens.size(), c.vocab);
    for (const GgufTensorInfo& info : gguf.tensors()) {
      EXPECT_OK(gguf.GetTensor(info.name).status());
    }
  }
}

TEST(GgufReaderTest, QuantizedFileKeepsF16ForRowsNotMultipleOf32) {
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, OpenShared("stories260K/derived/stories260K-Q4_0.gguf"));
  ASSERT_OK_AND_ASSIGN(TensorView q, gguf.GetTensor("blk.0.attn_q.weight"));
  EXPECT_EQ(q.type, TensorType::kQ4_0);
  EXPECT_EQ(q.num_bytes, 64u / 32 * 18 * 64);
  ASSERT_OK_AND_ASSIGN(TensorView down, gguf.GetTensor("blk.0.ffn_down.weight"));
  EXPECT_EQ(down.type, TensorType::kF16);
  EXPECT_EQ(down.num_bytes, 172u * 64 * 2);
  ASSERT_OK_AND_ASSIGN(TensorView norm, gguf.GetTensor("blk.0.attn_norm.weight"));
  EXPECT_EQ(norm.type, TensorType::kF32);
}

// Dequantises every row of `view` into floats.
std::vector<float> Dequantize(const TensorView& view) {
  std::vector<float> out(static_cast<size_t>(view.num_elements));
  const size_t row_bytes = view.num_bytes / static_cast<size_t>(view.num_rows());
  for (int64_t r = 0; r < view.num_rows(); ++r) {
    const absl::Status status =
        DequantizeRow(view.type, absl::MakeConstSpan(view.data + r * row_bytes, row_bytes),
                      absl::MakeSpan(out.data() + r * view.row_length(), view.row_length()));
    EXPECT_OK(status);
  }
  return out;
}

// Q8_0 rounds x/d to the nearest integer, so each weight is within half a step of d.
TEST(GgufReaderTest, Q8_0WeightsAreWithinHalfAScaleOfTheF32Original) {
  ASSERT_OK_AND_ASSIGN(GgufFile f32, OpenShared("stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(GgufFile q8, OpenShared("stories260K/derived/stories260K-Q8_0.gguf"));
  int checked = 0;
  for (const GgufTensorInfo& info : q8.tensors()) {
    if (info.type != TensorType::kQ8_0) continue;
    SCOPED_TRACE(std::string(info.name));
    ASSERT_OK_AND_ASSIGN(TensorView quantized, q8.GetTensor(info.name));
    ASSERT_OK_AND_ASSIGN(TensorView original, f32.GetTensor(info.name));
    ASSERT_EQ(quantized.ne, original.ne);
    const std::vector<float> approx = Dequantize(quantized);
    const std::vector<float> exact = Dequantize(original);
    for (size_t block = 0; block < exact.size() / 32; ++block) {
      const uint8_t* b = quantized.data + block * 34;
      const float d = Fp16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
      for (size_t i = block * 32; i < block * 32 + 32; ++i) {
        // Half a step, plus the fp16 rounding of d times the largest quant (127).
        ASSERT_LE(std::fabs(approx[i] - exact[i]), d / 2 + 127 * d * (1.0f / 1024)) << i;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 32);
}

TEST(GgufReaderTest, ReadsEveryValueTypeFromBuilder) {
  const std::vector<uint8_t> bytes = GgufBuilder()
                                         .AddUint8("u8", 200)
                                         .AddInt8("i8", -100)
                                         .AddUint16("u16", 60000)
                                         .AddInt16("i16", -30000)
                                         .AddUint32("u32", 4000000000u)
                                         .AddInt32("i32", -2000000000)
                                         .AddUint64("u64", 18000000000000000000ull)
                                         .AddInt64("i64", -9000000000000000000ll)
                                         .AddFloat32("f32", 0.25f)
                                         .AddFloat64("f64", 1e300)
                                         .AddBool("yes", true)
                                         .AddBool("no", false)
                                         .AddString("s", "héllo")
                                         .AddString("empty", "")
                                         .AddStringArray("strs", {"a", "", "ccc"})
                                         .AddFloat32Array("floats", {1.5f, -2.0f})
                                         .AddInt32Array("ints", {7, -8, 9})
                                         .Build();
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes)));
  EXPECT_EQ(gguf.metadata().size(), 17u);
  EXPECT_EQ(gguf.metadata()[0].key, "u8");
  EXPECT_EQ(gguf.metadata()[0].value.type, GgufValueType::kUint8);
  EXPECT_THAT(gguf.GetUint32("u8"), IsOkAndHolds(200u));
  EXPECT_THAT(gguf.GetInt32("i8"), IsOkAndHolds(-100));
  EXPECT_THAT(gguf.GetUint32("u16"), IsOkAndHolds(60000u));
  EXPECT_THAT(gguf.GetInt64("i16"), IsOkAndHolds(-30000));
  EXPECT_THAT(gguf.GetUint32("u32"), IsOkAndHolds(4000000000u));
  EXPECT_THAT(gguf.GetInt32("i32"), IsOkAndHolds(-2000000000));
  EXPECT_THAT(gguf.GetUint64("u64"), IsOkAndHolds(18000000000000000000ull));
  EXPECT_THAT(gguf.GetInt64("i64"), IsOkAndHolds(-9000000000000000000ll));
  EXPECT_THAT(gguf.GetFloat32("f32"), IsOkAndHolds(0.25f));
  EXPECT_THAT(gguf.GetFloat64("f32"), IsOkAndHolds(0.25));
  EXPECT_THAT(gguf.GetFloat64("f64"), IsOkAndHolds(1e300));
  EXPECT_THAT(gguf.GetBool("yes"), IsOkAndHolds(true));
  EXPECT_THAT(gguf.GetBool("no"), IsOkAndHolds(false));
  EXPECT_THAT(gguf.GetString("s"), IsOkAndHolds("héllo"));
  EXPECT_THAT(gguf.GetString("empty"), IsOkAndHolds(""));
  EXPECT_THAT(gguf.GetStringArray("strs"), IsOkAndHolds(ElementsAre("a", "", "ccc")));
  EXPECT_THAT(gguf.GetFloat32Array("floats"), IsOkAndHolds(ElementsAre(1.5f, -2.0f)));
  EXPECT_THAT(gguf.GetInt32Array("ints"), IsOkAndHolds(ElementsAre(7, -8, 9)));
  ASSERT_OK_AND_ASSIGN(const GgufArray* ints, gguf.GetArray("ints"));
  EXPECT_EQ(ints->element_type, GgufValueType::kInt32);
  EXPECT_EQ(ints->size, 3u);
  EXPECT_EQ(ints->raw.size(), 12u);
}

TEST(GgufReaderTest, GettersNameTheKeyOnMissingOrWrongType) {
  const std::vector<uint8_t> bytes = GgufBuilder()
                                         .AddInt32("neg", -1)
                                         .AddUint64("big", 1ull << 40)
                                         .AddString("s", "x")
                                         .AddFloat64("f64", 0.5)
                                         .AddFloat32Array("floats", {1.0f})
                                         .AddStringArray("strs", {"a"})
                                         .Build();
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes)));
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(gguf.GetUint32("missing.key"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.key")));
  EXPECT_THAT(gguf.GetUint32("neg"),
              StatusIs(kInvalid, AllOf(HasSubstr("'neg' = -1"), HasSubstr("uint32"))));
  EXPECT_THAT(gguf.GetInt32("big"), StatusIs(kInvalid, HasSubstr("'big' = 1099511627776")));
  EXPECT_THAT(gguf.GetUint64("big"), IsOkAndHolds(1ull << 40));
  EXPECT_THAT(gguf.GetUint32("s"),
              StatusIs(kInvalid, AllOf(HasSubstr("'s'"), HasSubstr("type string"))));
  EXPECT_THAT(gguf.GetString("neg"), StatusIs(kInvalid, HasSubstr("type int32, want string")));
  EXPECT_THAT(gguf.GetFloat32("f64"), StatusIs(kInvalid, HasSubstr("'f64'")));
  EXPECT_THAT(gguf.GetBool("s"), StatusIs(kInvalid));
  EXPECT_THAT(gguf.GetArray("s"), StatusIs(kInvalid, HasSubstr("want array")));
  EXPECT_THAT(gguf.GetStringArray("floats"), StatusIs(kInvalid, HasSubstr("'floats'")));
  EXPECT_THAT(gguf.GetFloat32Array("strs"), StatusIs(kInvalid, HasSubstr("'strs'")));
  EXPECT_THAT(gguf.GetInt32Array("floats"), StatusIs(kInvalid, HasSubstr("integers")));
  EXPECT_THAT(gguf.GetStringArray("absent"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(GgufReaderTest, TensorsFromBuilderPointIntoTheBuffer) {
  const std::vector<uint8_t> bytes =
      GgufBuilder()
          .SetAlignment(64)
          .AddTensor("a", TensorType::kF32, {2, 3}, F32Bytes({1, 2, 3, 4, 5, 6}))
          .AddTensor("b", TensorType::kF32, {1}, F32Bytes({7}))
          .Build();
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes)));
  EXPECT_EQ(gguf.alignment(), 64u);
  EXPECT_EQ(gguf.data_offset() % 64, 0u);
  ASSERT_OK_AND_ASSIGN(TensorView a, gguf.GetTensor("a"));
  EXPECT_EQ(a.data, bytes.data() + gguf.data_offset());
  EXPECT_THAT(a.ne, ElementsAre(2, 3));
  ASSERT_OK_AND_ASSIGN(TensorView b, gguf.GetTensor("b"));
  EXPECT_EQ(b.data, bytes.data() + gguf.data_offset() + 64);
  float value;
  std::memcpy(&value, b.data, 4);
  EXPECT_EQ(value, 7.0f);
}

TEST(GgufReaderTest, UnsupportedTensorTypesParseButAreRefusedNamingFileTensorAndType) {
  // The types ggml defines that Tandem cannot compute with yet (two blocks of each).
  const TensorType unsupported[] = {TensorType::kIQ1_S,  TensorType::kIQ1_M, TensorType::kIQ2_XXS,
                                    TensorType::kIQ2_XS, TensorType::kIQ2_S, TensorType::kIQ3_XXS,
                                    TensorType::kIQ3_S,  TensorType::kTQ1_0, TensorType::kTQ2_0,
                                    TensorType::kMXFP4,  TensorType::kQ8_1,  TensorType::kQ8_K};
  for (TensorType type : unsupported) {
    const TensorTypeTraits& traits = GetTraits(type);
    SCOPED_TRACE(traits.name);
    const std::vector<uint8_t> bytes =
        GgufBuilder()
            .AddTensor("blk.0.ffn_up.weight", type, {traits.block_size, 2},
                       std::string(2 * traits.bytes_per_block, '\0'))
            .Build();
    ASSERT_OK_AND_ASSIGN(GgufFile gguf,
                         GgufFile::Parse(MappedFile::FromBuffer(bytes, "/models/iq.gguf")));
    ASSERT_EQ(gguf.tensors().size(), 1u);
    EXPECT_EQ(gguf.tensors()[0].num_bytes, static_cast<uint64_t>(2 * traits.bytes_per_block));
    EXPECT_THAT(gguf.GetTensor("blk.0.ffn_up.weight"),
                StatusIs(absl::StatusCode::kUnimplemented,
                         AllOf(HasSubstr("/models/iq.gguf: "), HasSubstr("'blk.0.ffn_up.weight'"),
                               HasSubstr(std::string(" ") + std::string(traits.name) + ","))));
  }
}

TEST(GgufReaderTest, Version2ParsesLikeVersion3) {
  const std::vector<uint8_t> bytes = GgufBuilder().SetVersion(2).AddUint32("k", 1).Build();
  ASSERT_OK_AND_ASSIGN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes)));
  EXPECT_EQ(gguf.version(), 2u);
  EXPECT_THAT(gguf.GetUint32("k"), IsOkAndHolds(1u));
}

TEST(GgufReaderTest, MissingFileIsNotFound) {
  EXPECT_THAT(GgufFile::Open("/no/such/model.gguf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/no/such/model.gguf")));
}

}  // namespace
}  // namespace tandem
