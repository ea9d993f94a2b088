// A tokenizer sent over the wire (tokenizer_wire.h) is the worker's tokenizer: for every
// tokenizer file the tests share, the copy rebuilt from the serialized TokenizerData has the
// same TokenizerFingerprint, encodes llama.cpp's test strings to the worker's (and the
// reference) ids, and tokenizes conversations (prompt_tokenization.h) to the worker's ids.
#include "wire/tokenizer_wire.h"

#include <cstdint>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/vocab_vectors_test_util.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_fingerprint.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/prompt_tokenization.h"

namespace tandem {
namespace {

using ::tandem::testing::ReadVocabTestVectors;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::tandem::testing::VocabTestVectors;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct WireCase {
  std::string name;
  std::string model;    // relative to the shared folder
  std::string vectors;  // models/vocab/NAME.inp/.out; "" for none
  LoadOptions options;
};

void PrintTo(const WireCase& c, std::ostream* os) { *os << c.model; }

// The worker's side (the loaded tokenizer) and the coordinator's (rebuilt from the bytes).
struct Sides {
  std::optional<Tokenizer> worker;
  std::optional<Tokenizer> coordinator;
  std::optional<std::string> coordinator_template;
};

absl::StatusOr<Sides> Ship(const WireCase& c, const std::optional<std::string>& chat_template) {
  ASSIGN_OR_RETURN(std::string path, SharedFile(c.model));
  Sides sides;
  ASSIGN_OR_RETURN(sides.worker, LoadTokenizer(path, c.options));
  v1::TokenizerData sent;
  TokenizerToProto(sides.worker->vocabulary(), chat_template, &sent);
  v1::TokenizerData received;
  if (!received.ParseFromString(sent.SerializeAsString())) {
    return absl::DataLossError("the serialized tokenizer does not parse");
  }
  ASSIGN_OR_RETURN(Vocabulary vocab, VocabularyFromProto(received));
  sides.coordinator_template = ChatTemplateFromProto(received);
  ASSIGN_OR_RETURN(sides.coordinator, Tokenizer::Create(std::move(vocab)));
  return sides;
}

class TokenizerWireTest : public ::testing::TestWithParam<WireCase> {};

TEST_P(TokenizerWireTest, TheRebuiltTokenizerHasTheWorkersFingerprintAndIds) {
  const WireCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(Sides sides, Ship(c, std::nullopt));
  EXPECT_EQ(TokenizerFingerprint(sides.coordinator->vocabulary(), sides.coordinator_template),
            TokenizerFingerprint(sides.worker->vocabulary(), std::nullopt));
  EXPECT_EQ(sides.coordinator->fingerprint(), sides.worker->fingerprint());
  VocabTestVectors vectors;
  if (!c.vectors.empty()) {
    ASSERT_OK_AND_ASSIGN(vectors, ReadVocabTestVectors(c.vectors));
    ASSERT_EQ(vectors.inputs.size(), 46u) << c.vectors;
  }
  std::vector<std::string> texts = vectors.inputs;
  texts.push_back("Once upon a time, <s> there was a <|im_start|>little  girl.\n\n");
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const EncodeOptions options :
         {EncodeOptions{}, EncodeOptions{.add_special = true, .parse_special = true}}) {
      ASSERT_OK_AND_ASSIGN(std::vector<int32_t> worker, sides.worker->Encode(texts[i], options));
      ASSERT_OK_AND_ASSIGN(std::vector<int32_t> coordinator,
                           sides.coordinator->Encode(texts[i], options));
      EXPECT_EQ(coordinator, worker) << "string " << i << ": '" << texts[i] << "'";
    }
    if (i < vectors.outputs.size()) {
      EXPECT_THAT(sides.coordinator->Encode(texts[i]),
                  ::tandem::testing::IsOkAndHolds(ElementsAreArray(vectors.outputs[i])))
          << "string " << i;
    }
  }
}

v1::TokenizeRequest Conversation(const std::string& format) {
  v1::TokenizeRequest request;
  v1::ChatConversation* chat = request.mutable_chat();
  chat->set_format(format);
  for (const auto& [role, content] : std::vector<std::pair<std::string, std::string>>{
           {"system", "You are terse."},
           {"user", "Tell me a story about <|im_end|> a cat."},
           {"assistant", "Once upon a time"},
           {"user", "Go on, please!"}}) {
    v1::ChatMessage* m = chat->add_messages();
    m->set_role(role);
    m->set_content(content);
  }
  return request;
}

TEST_P(TokenizerWireTest, ConversationsTokenizeToTheWorkersIdsWithEveryTemplate) {
  const WireCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(std::string qwen_path,
                       SharedFile("models/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja"));
  const std::string qwen = ReadFile(qwen_path);
  ASSERT_FALSE(qwen.empty());
  // The model's own template, none (the vocabulary's family format, else raw), built-ins.
  struct Path {
    std::optional<std::string> model_template;
    std::string format;
  };
  for (const Path& path : {Path{qwen, ""}, Path{std::nullopt, ""}, Path{std::nullopt, "chatml"},
                           Path{std::nullopt, "llama3"}, Path{qwen, "raw"}}) {
    ASSERT_OK_AND_ASSIGN(Sides sides, Ship(c, path.model_template));
    EXPECT_EQ(sides.coordinator_template, path.model_template);
    const v1::TokenizeRequest request = Conversation(path.format);
    ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse worker,
                         TokenizePrompt(*sides.worker, path.model_template, request));
    ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse coordinator,
                         TokenizePrompt(*sides.coordinator, sides.coordinator_template, request));
    EXPECT_FALSE(worker.token_ids().empty());
    EXPECT_THAT(coordinator.token_ids(), ElementsAreArray(worker.token_ids()))
        << "format '" << path.format << "', template " << path.model_template.has_value();
    EXPECT_EQ(coordinator.rendered_text(), worker.rendered_text());
  }
}

std::vector<WireCase> Cases() {
  std::vector<WireCase> cases;
  for (const char* name : {"llama-spm", "gpt-2", "mpt", "falcon", "starcoder", "deepseek-coder",
                           "deepseek-llm", "bert-bge", "baichuan", "gpt-neox"}) {
    const std::string file = std::string("ggml-vocab-") + name + ".gguf";
    const bool has_vectors = std::string(name) != "baichuan" && std::string(name) != "gpt-neox";
    cases.push_back({name, "models/vocab/" + file, has_vectors ? file : "", {}});
  }
  cases.push_back({"llama2_tokenizer_model",
                   "models/llama2-tokenizer/tokenizer.model",
                   "ggml-vocab-llama-spm.gguf",
                   {}});
  WireCase bpe{
      "llama3_encoder_json", "models/llama3-bpe-tokenizer", "ggml-vocab-llama-bpe.gguf", {}};
  bpe.options.pre_tokenizer = "llama-bpe";
  cases.push_back(bpe);
  cases.push_back({"stories260K_gguf", "models/stories260K/stories260K.gguf", "", {}});
  cases.push_back({"stories260K_hf", "models/stories260K/hf", "", {}});
  cases.push_back(
      {"llama_2_tiny_random", "models/llama-2-tiny-random/llama-2-tiny-random.gguf", "", {}});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(SharedTokenizers, TokenizerWireTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<WireCase>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (ch == '-' || ch == '.') ch = '_';
                           }
                           return name;
                         });

TEST(TokenizerWireErrorsTest, AnUnknownEnumValueIsDataLossNamingTheField) {
  v1::TokenizerData data;
  data.set_encoding(v1::TEXT_ENCODING_BYTE_LEVEL);
  data.set_merge_model(static_cast<v1::MergeModel>(9));
  data.set_space_prefix(v1::SPACE_PREFIX_NEVER);
  EXPECT_THAT(VocabularyFromProto(data),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("merge_model 9")));
  data.set_merge_model(v1::MERGE_MODEL_RANKS);
  data.clear_space_prefix();  // UNSPECIFIED: a sender that did not fill it
  EXPECT_THAT(VocabularyFromProto(data),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("space_prefix 0")));
}

TEST(TokenizerWireErrorsTest, MergeListsOfDifferentLengthsAreDataLoss) {
  v1::TokenizerData data;
  data.set_encoding(v1::TEXT_ENCODING_BYTE_LEVEL);
  data.set_merge_model(v1::MERGE_MODEL_RANKS);
  data.set_space_prefix(v1::SPACE_PREFIX_NEVER);
  data.add_merge_left("a");
  EXPECT_THAT(VocabularyFromProto(data),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 merge_left but 0 merge_right")));
}

}  // namespace
}  // namespace tandem
