// llama.cpp's tokenizer test vectors (../shared/models/vocab/*.gguf.inp/.out), one test per
// vocabulary: every test string must encode to the reference ids (no BOS, no special parsing),
// and decode back to itself wherever the vocabulary can represent it.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/vocab_vectors_test_util.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ReadVocabTestVectors;
using ::tandem::testing::SharedFile;
using ::tandem::testing::VocabTestVectors;
using ::testing::ElementsAreArray;

struct VectorCase {
  std::string name;     // test name
  std::string model;    // relative to the shared folder: what LoadTokenizer opens
  std::string vectors;  // relative to models/vocab: NAME.gguf (without .inp/.out)
  LoadOptions options;
  bool round_trip = true;  // decode(encode(s)) == s for every string
};

class VocabVectorsTest : public ::testing::TestWithParam<VectorCase> {};

TEST_P(VocabVectorsTest, EncodesEveryTestStringToTheReferenceIds) {
  const VectorCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile(c.model));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, LoadTokenizer(model, c.options));
  ASSERT_OK_AND_ASSIGN(const VocabTestVectors vectors, ReadVocabTestVectors(c.vectors));
  ASSERT_EQ(vectors.inputs.size(), 46u);
  ASSERT_EQ(vectors.outputs.size(), vectors.inputs.size());
  for (size_t i = 0; i < vectors.inputs.size(); ++i) {
    const std::string& text = vectors.inputs[i];
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tokenizer.Encode(text));
    EXPECT_THAT(ids, ElementsAreArray(vectors.outputs[i]))
        << "test string " << i << ": '" << text << "'";
    if (c.round_trip) {
      EXPECT_THAT(tokenizer.Decode(ids), ::tandem::testing::IsOkAndHolds(text))
          << "test string " << i;
    }
  }
}

std::vector<VectorCase> Cases() {
  std::vector<VectorCase> cases;
  for (const char* name : {"llama-spm", "gpt-2", "mpt", "falcon", "starcoder", "deepseek-coder",
                           "deepseek-llm", "bert-bge"}) {
    VectorCase c;
    c.name = name;
    c.model = absl::StrCat("models/vocab/ggml-vocab-", name, ".gguf");
    c.vectors = absl::StrCat("ggml-vocab-", name, ".gguf");
    // WordPiece lower-cases and drops accents and spaces: no round trip.
    c.round_trip = c.name != "bert-bge";
    cases.push_back(c);
  }
  VectorCase spm;
  spm.name = "llama2-tokenizer.model";
  spm.model = "models/llama2-tokenizer/tokenizer.model";
  spm.vectors = "ggml-vocab-llama-spm.gguf";
  cases.push_back(spm);
  VectorCase bpe;
  bpe.name = "llama3-encoder.json";
  bpe.model = "models/llama3-bpe-tokenizer";
  bpe.vectors = "ggml-vocab-llama-bpe.gguf";
  bpe.options.pre_tokenizer = "llama-bpe";
  cases.push_back(bpe);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllVocabularies, VocabVectorsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<VectorCase>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (ch == '-' || ch == '.') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tandem
