// Random-weight fixture models (tools/make_fixture_model) for the shapes the shared models
// lack: qwen2 with QKV biases, untied outputs, GQA 3:1, F16/Q8_0/Q4_0 GGUF. Each is written as
// GGUF and as a Hugging Face folder of the same weights; both must give the same logits.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct FixtureCase {
  std::string name;
  std::vector<std::string> args;
  float gguf_vs_hf_tolerance;  // F32 files: float rounding only
};

void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.name; }

std::vector<float> AllLogits(const Model& model, int threads, const std::vector<int32_t>& tokens,
                             KvType kv = KvType::kF32) {
  ThreadPool pool(threads);
  Decoder decoder(model, pool);
  auto cache = decoder.NewCache(64, kv);
  if (!cache.ok()) {
    ADD_FAILURE() << cache.status();
    return {};
  }
  auto logits = decoder.Forward(**cache, tokens, 0, LogitsMode::kAll);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>();
}

std::vector<int32_t> Prompt(int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int i = 1; i < 19; ++i) ids.push_back(static_cast<int32_t>((i * 131 + 7) % vocab));
  return ids;
}

class FixtureModelTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(FixtureModelTest, GgufAndHfFilesGiveTheSameLogitsAndBatchesAreInvariant) {
  const FixtureCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(std::string vocab,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  std::vector<std::string> args = c.args;
  args.insert(args.end(), {"--vocab-from", vocab, "--seed", "5"});
  ASSERT_OK_AND_ASSIGN(std::string dir, testing::MakeFixtureModel(args));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> gguf, Model::Load(dir + "/model.gguf"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> hf, Model::Load(dir + "/hf"));
  EXPECT_EQ(gguf->config().architecture, hf->config().architecture);
  EXPECT_EQ(gguf->config().qkv_bias, hf->config().qkv_bias);
  EXPECT_EQ(gguf->parameter_count(), hf->parameter_count());

  const std::vector<int32_t> tokens = Prompt(gguf->config().vocab_size);
  const std::vector<float> from_gguf = AllLogits(*gguf, 2, tokens);
  const std::vector<float> from_hf = AllLogits(*hf, 2, tokens);
  ASSERT_EQ(from_gguf.size(), from_hf.size());
  ASSERT_FALSE(from_gguf.empty());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < from_gguf.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(from_gguf[i] - from_hf[i])));
    max_abs = std::max(max_abs, double(std::fabs(from_hf[i])));
  }
  EXPECT_LE(max_diff, c.gguf_vs_hf_tolerance) << "largest logit " << max_abs;
  EXPECT_GT(max_abs, 0.1);  // the model computes something

  // Batch invariance: one batch of 19 vs one token at a time, other thread count.
  for (const Model* model : {gguf.get(), hf.get()}) {
    const std::vector<float> batched = AllLogits(*model, 1, tokens, KvType::kF16);
    ThreadPool pool(2);
    Decoder decoder(*model, pool);
    ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(64, KvType::kF16));
    const int64_t vocab_size = model->config().vocab_size;
    for (size_t i = 0; i < tokens.size(); ++i) {
      ASSERT_OK_AND_ASSIGN(auto one, decoder.Forward(*cache, {tokens[i]}, i, LogitsMode::kLast));
      ASSERT_EQ(
          0, std::memcmp(one.data(), batched.data() + i * vocab_size, vocab_size * sizeof(float)))
          << model->path() << " position " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FixtureModelTest,
    ::testing::Values(
        FixtureCase{"llama_f32_gqa2",
                    {"--arch", "llama", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn",
                     "96", "--layers", "2"},
                    1e-4f},
        FixtureCase{"llama_f32_untied_gqa3",
                    {"--arch", "llama", "--dim", "96", "--heads", "6", "--kv-heads", "2", "--ffn",
                     "160", "--layers", "3"},
                    1e-4f},
        // Llama 3 RoPE factors: GGUF's rope_freqs.weight (the converter's formula in numpy)
        // against the factors Tandem computes from the HF rope_scaling; an original context of
        // 512 puts the blended band inside head_dim 16's frequencies at base 1e4.
        FixtureCase{"llama3_rope_factors",
                    {"--arch", "llama", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn",
                     "96", "--llama3-rope", "--llama3-original-context", "512"},
                    1e-4f},
        FixtureCase{"qwen2_f32_bias_tied",
                    {"--arch", "qwen2", "--dim", "64", "--heads", "4", "--kv-heads", "1", "--ffn",
                     "128", "--tied"},
                    1e-4f},
        FixtureCase{"qwen3_f32_qk_norm_tied",
                    {"--arch", "qwen3", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn",
                     "96", "--head-dim", "32", "--tied"},
                    1e-4f},
        FixtureCase{
            "phi3_f32_fused_qkv_gate_up",
            {"--arch", "phi3", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "96"},
            1e-4f},
        // Gemma: the HF folder holds its norms as w - 1; soft-caps small enough to bite and a
        // window of 4 inside the 19-token prompt.
        FixtureCase{"gemma2_softcap_window",
                    {"--arch", "gemma2", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn",
                     "96", "--layers", "3", "--attn-softcap", "2", "--final-softcap", "3"},
                    1e-4f},
        FixtureCase{"gemma3_qk_norm_window_pattern",
                    {"--arch", "gemma3", "--dim", "64", "--heads", "4", "--kv-heads", "1", "--ffn",
                     "96", "--layers", "3", "--head-dim", "32", "--rope-base", "1000000"},
                    1e-4f},
        FixtureCase{
            "llama_f16",
            {"--type", "f16", "--dim", "64", "--heads", "2", "--kv-heads", "2", "--ffn", "64"},
            1e-4f},
        // The HF folder keeps the unquantized weights, so only quantization error separates
        // them (embedding and tied output quantized too; logits of magnitude ~4). Exactness
        // of the quantized paths is pinned by the golden tests on the shared Q8_0/Q4_0 files.
        FixtureCase{"llama_q8_0", {"--type", "q8_0", "--dim", "64", "--ffn", "96"}, 0.15f},
        FixtureCase{"qwen2_q4_0",
                    {"--arch", "qwen2", "--type", "q4_0", "--dim", "64", "--ffn", "96"},
                    2.0f},
        // llama-quantize's mixes as make_fixture_model writes them (dim 256: K-quants apply;
        // ffn_down rows of 320 fall back to Q5_0 / Q5_1 / Q8_0 as llama-quantize does).
        FixtureCase{"llama_q4_k_m", {"--type", "q4_k_m", "--dim", "256", "--ffn", "320"}, 2.0f},
        FixtureCase{"llama_q5_k_m", {"--type", "q5_k_m", "--dim", "256", "--ffn", "320"}, 1.0f},
        FixtureCase{"qwen2_q6_k",
                    {"--arch", "qwen2", "--type", "q6_k", "--dim", "256", "--ffn", "320"},
                    1.0f}),
    [](const ::testing::TestParamInfo<FixtureCase>& info) { return info.param.name; });

TEST(FixtureModelTest, ATensorTheLoaderDoesNotUseIsRefusedNamingFileAndTensor) {
  ASSERT_OK_AND_ASSIGN(std::string vocab,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(
      std::string dir,
      testing::MakeFixtureModel({"--vocab-from", vocab, "--extra-tensor", "cls.weight"}));
  struct Case {
    std::string load, file, tensor;
  };
  for (const Case& c : {Case{dir + "/model.gguf", dir + "/model.gguf", "cls.weight"},
                        Case{dir + "/hf", dir + "/hf/model.safetensors", "cls.weight"}}) {
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(c.load);
    ASSERT_FALSE(model.ok()) << c.load << " loads with a tensor it does not use";
    EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
    EXPECT_THAT(std::string(model.status().message()),
                ::testing::AllOf(::testing::HasSubstr(c.file), ::testing::HasSubstr(c.tensor)));
  }
}

// Replaces the first `from` at or after `after` in the file at `path` by `to` (same length).
void PatchFile(const std::string& path, const std::string& after, const std::string& from,
               const std::string& to) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = bytes.find(from, bytes.find(after));
  ASSERT_NE(at, std::string::npos) << path;
  bytes.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(FixtureModelTest, AnArchitectureTandemDoesNotKnowIsRefusedNamingFileAndArchitecture) {
  ASSERT_OK_AND_ASSIGN(std::string vocab,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(std::string dir, testing::MakeFixtureModel({"--vocab-from", vocab}));
  PatchFile(dir + "/model.gguf", "general.architecture", "llama", "mamba");
  PatchFile(dir + "/hf/config.json", "\"model_type\"", "\"llama\"", "\"mamba\"");
  for (const auto& [load, file] :
       {std::pair<std::string, std::string>{dir + "/model.gguf", dir + "/model.gguf"},
        {dir + "/hf", dir + "/hf/config.json"}}) {
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(load);
    ASSERT_FALSE(model.ok()) << load;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
    EXPECT_THAT(std::string(model.status().message()),
                ::testing::AllOf(::testing::HasSubstr(file), ::testing::HasSubstr("'mamba'")));
  }
}

}  // namespace
}  // namespace tandem
