// Every quantized llama fixture in ../shared/models/fixtures (written by llama.cpp's own
// quantizer, in any per-tensor mix of types) against its reference logits, which llama.cpp
// computed in exact F32 math on the dequantized weights: one forward pass over the manifest's
// 64 tokens, logits at every position, within max abs 5e-3 and rms 5e-4 (issue 11). (That a
// position's logits are bit-identical however they are batched, in both activation modes, is
// activation_modes_test.cc's.)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

// The fixtures' token ids (MANIFEST.json "token_ids").
const std::vector<int32_t> kTokens = {
    1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
    338, 401, 396, 267, 337, 501, 500, 505, 196, 90,  472, 56,  136, 73,  165, 275,
    63,  408, 126, 403, 165, 406, 493, 490, 137, 285, 227, 132, 313, 459, 442, 331,
    442, 266, 346, 489, 338, 27,  377, 378, 116, 444, 90,  404, 446, 248, 33,  85};

// A float32 C-order .npy (format 1.0 or 2.0) as flat values; empty on any surprise.
std::vector<float> ReadNpyF32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < 12 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {};
  const int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
  size_t offset = 10;
  if (major >= 2) {
    header_len |= size_t{static_cast<uint8_t>(bytes[10])} << 16 |
                  size_t{static_cast<uint8_t>(bytes[11])} << 24;
    offset = 12;
  }
  const std::string header = bytes.substr(offset, header_len);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos) {
    return {};
  }
  const size_t data = offset + header_len;
  std::vector<float> values((bytes.size() - data) / 4);
  std::memcpy(values.data(), bytes.data() + data, values.size() * 4);
  return values;
}

std::vector<float> AllLogits(const Model& model, int threads) {
  ThreadPool pool(threads);
  Decoder decoder(model, pool);
  auto cache = decoder.NewCache(64, KvType::kF32);
  if (!cache.ok()) {
    ADD_FAILURE() << cache.status();
    return {};
  }
  auto logits = decoder.Forward(**cache, kTokens, 0, LogitsMode::kAll);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>();
}

class QuantFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantFixtureTest, MatchesTheExactReferenceLogits) {
  const std::string name = GetParam();
  ASSERT_OK_AND_ASSIGN(std::string gguf, testing::SharedFile("models/fixtures/" + name + ".gguf"));
  ASSERT_OK_AND_ASSIGN(std::string npy,
                       testing::SharedFile("models/fixtures/" + name + ".logits.npy"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(gguf));
  const std::vector<float> reference = ReadNpyF32(npy);
  const std::vector<float> logits = AllLogits(*model, 2);
  ASSERT_EQ(reference.size(), kTokens.size() * model->config().vocab_size) << npy;
  ASSERT_EQ(logits.size(), reference.size());
  double max_abs = 0, sum_sq = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double d = std::fabs(double{logits[i]} - reference[i]);
    max_abs = std::max(max_abs, d);
    sum_sq += d * d;
  }
  const double rms = std::sqrt(sum_sq / logits.size());
  std::printf("[ FIXTURE  ] %s (%s): max abs %.3g, rms %.3g\n", name.c_str(),
              model->weight_type().c_str(), max_abs, rms);
  EXPECT_LE(max_abs, 5e-3) << name;
  EXPECT_LE(rms, 5e-4) << name;
}

// A real file whose blk.0.ffn_up.weight is retyped IQ2_XXS (still unsupported; its smaller
// data fits in the Q4_K tensor's bytes): loading names the file, the tensor and the type.
TEST(QuantFixtureErrorTest, AnUnsupportedTypeIsRefusedNamingFileTensorAndType) {
  ASSERT_OK_AND_ASSIGN(std::string source,
                       testing::SharedFile("models/fixtures/llama-pure-Q4_K.gguf"));
  std::ifstream in(source, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  const std::string name = "blk.0.ffn_up.weight";
  const size_t at = bytes.find(name);
  ASSERT_NE(at, std::string::npos);
  // name, then u32 n_dims = 2, two u64 dimensions, then the u32 type.
  const size_t type_at = at + name.size() + 4 + 16;
  uint32_t type;
  std::memcpy(&type, bytes.data() + type_at, 4);
  ASSERT_EQ(type, static_cast<uint32_t>(TensorType::kQ4_K));
  type = static_cast<uint32_t>(TensorType::kIQ2_XXS);
  std::memcpy(bytes.data() + type_at, &type, 4);
  const std::string path = ::testing::TempDir() + "/iq2_xxs_ffn_up.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_THAT(Model::Load(path).status(),
              testing::StatusIs(absl::StatusCode::kUnimplemented,
                                ::testing::AllOf(::testing::HasSubstr(path + ": "),
                                                 ::testing::HasSubstr("'blk.0.ffn_up.weight'"),
                                                 ::testing::HasSubstr("IQ2_XXS"))));
}

INSTANTIATE_TEST_SUITE_P(Files, QuantFixtureTest,
                         ::testing::Values("llama-Q8_0", "llama-Q4_0", "llama-Q4_1", "llama-Q5_0",
                                           "llama-Q5_1", "llama-Q2_K", "llama-Q3_K_M",
                                           "llama-Q4_K_M", "llama-Q5_K_M", "llama-Q6_K",
                                           "llama-IQ4_NL", "llama-IQ4_XS", "llama-pure-Q2_K",
                                           "llama-pure-Q3_K", "llama-pure-Q4_K", "llama-pure-Q5_K"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tandem
