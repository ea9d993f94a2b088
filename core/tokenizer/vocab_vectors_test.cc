// llama.cpp's tokenizer test vectors (../shared/models/vocab/*.gguf.inp/.out), one test per
// vocabulary: every test string must encode to the reference ids (no BOS, no special parsing),
// and decode back to itself wherever the vocabulary can represent it.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/status_matchers.h"
#include "core/base/test_data.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedFile;
using ::testing::ElementsAreArray;

const char kSeparator[] = "\n__ggml_vocab_test__\n";

struct VectorCase {
  std::string name;     // test name
  std::string model;    // relative to the shared folder: what LoadTokenizer opens
  std::string vectors;  // relative to models/vocab: NAME.gguf (without .inp/.out)
  LoadOptions options;
  bool round_trip = true;  // decode(encode(s)) == s for every string
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct Vectors {
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> outputs;
};

Vectors ReadVectors(const std::string& inp_path, const std::string& out_path) {
  Vectors v;
  std::string inp = ReadFile(inp_path);
  size_t pos = 0;
  while (true) {
    const size_t end = inp.find(kSeparator, pos);
    if (end == std::string::npos) break;
    v.inputs.push_back(inp.substr(pos, end - pos));
    pos = end + sizeof(kSeparator) - 1;
  }
  const std::string out = ReadFile(out_path);
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (v.outputs.size() == v.inputs.size()) break;
    std::vector<int32_t> ids;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      int32_t id = 0;
      EXPECT_TRUE(absl::SimpleAtoi(field, &id)) << field;
      ids.push_back(id);
    }
    v.outputs.push_back(std::move(ids));
  }
  return v;
}

class VocabVectorsTest : public ::testing::TestWithParam<VectorCase> {};

TEST_P(VocabVectorsTest, EncodesEveryTestStringToTheReferenceIds) {
  const VectorCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(std::string model, SharedFile(c.model));
  ASSERT_OK_AND_ASSIGN(std::string inp, SharedFile("models/vocab/" + c.vectors + ".inp"));
  ASSERT_OK_AND_ASSIGN(std::string out, SharedFile("models/vocab/" + c.vectors + ".out"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, LoadTokenizer(model, c.options));
  const Vectors vectors = ReadVectors(inp, out);
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
