// The names a client may call the target by (--served-model-name) and the system
// fingerprint every reply carries.
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/openai_response.h"
#include "services/coordinator/served_model_names.h"
#include "services/coordinator/system_fingerprint.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

TEST(ServedModelNamesTest, ParsesOneOrMoreNamesInOrder) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, ParseServedModelNames(""));
  EXPECT_THAT(names, IsEmpty());
  ASSERT_OK_AND_ASSIGN(names, ParseServedModelNames("gpt-4o-mini"));
  EXPECT_THAT(names, ElementsAre("gpt-4o-mini"));
  ASSERT_OK_AND_ASSIGN(names, ParseServedModelNames("stories,meta-llama/Llama-3.2-1B,a:b"));
  EXPECT_THAT(names, ElementsAre("stories", "meta-llama/Llama-3.2-1B", "a:b"));
}

TEST(ServedModelNamesTest, RefusesEmptyRepeatedSpacedAndTooManyNames) {
  const std::string many = "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q";
  for (const std::string& flag : {std::string("a,,b"), std::string("a,b,a"), std::string("a b"),
                                  std::string("a\tb"), std::string(257, 'x'), std::string(","),
                                  std::string("caf\xc3\xa9"), many}) {
    EXPECT_THAT(ParseServedModelNames(flag),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--served-model-name")))
        << flag;
  }
}

v1::ModelInfo Model(const std::string& name) {
  v1::ModelInfo m;
  m.set_name(name);
  m.set_architecture("llama");
  m.set_parameter_count(260000);
  m.set_weight_type("F32");
  m.set_kv_type("f32");
  m.set_context_size(512);
  m.set_vocab_size(512);
  m.set_vocabulary_fingerprint("0123456789abcdef");
  m.set_tokenizer_fingerprint("fedcba9876543210");
  m.set_path("/models/a.gguf");
  return m;
}

TEST(SystemFingerprintTest, IsStableAndIgnoresThePath) {
  const std::vector<std::string> settings = {"max_tokens=256"};
  const std::string fp = SystemFingerprint(Model("t"), nullptr, "0.1.0", settings);
  EXPECT_THAT(fp, MatchesRegex("fp_[0-9a-f]{16}"));
  EXPECT_EQ(SystemFingerprint(Model("t"), nullptr, "0.1.0", settings), fp);
  v1::ModelInfo moved = Model("t");
  moved.set_path("/elsewhere/a.gguf");
  EXPECT_EQ(SystemFingerprint(moved, nullptr, "0.1.0", settings), fp);
}

TEST(SystemFingerprintTest, ChangesWithWhatChangesOutputs) {
  const std::vector<std::string> settings = {"max_tokens=256"};
  const std::string fp = SystemFingerprint(Model("t"), nullptr, "0.1.0", settings);
  const v1::ModelInfo draft = Model("d");
  v1::ModelInfo kv = Model("t");
  kv.set_kv_type("i8");
  v1::ModelInfo weights = Model("t");
  weights.set_weight_type("Q8_0");
  v1::ModelInfo activations = Model("t");  // #31
  activations.set_activations("int8");
  v1::ModelInfo tokenizer = Model("t");
  tokenizer.set_tokenizer_fingerprint("0000000000000000");
  const std::vector<std::string> others = {
      SystemFingerprint(Model("t"), &draft, "0.1.0", settings),
      SystemFingerprint(kv, nullptr, "0.1.0", settings),
      SystemFingerprint(weights, nullptr, "0.1.0", settings),
      SystemFingerprint(activations, nullptr, "0.1.0", settings),
      SystemFingerprint(tokenizer, nullptr, "0.1.0", settings),
      SystemFingerprint(Model("u"), nullptr, "0.1.0", settings),
      SystemFingerprint(Model("t"), nullptr, "0.2.0", settings),
      SystemFingerprint(Model("t"), nullptr, "0.1.0", {"max_tokens=512"}),
  };
  for (size_t i = 0; i < others.size(); ++i) EXPECT_NE(others[i], fp) << i;
}

TEST(SystemFingerprintTest, IsInEveryReplyAndChunk) {
  OpenAiReply reply(OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 1, "alias", true);
  reply.set_system_fingerprint("fp_0123456789abcdef");
  v1::GenerationResult result;
  v1::TokenDelta delta;
  delta.set_text("x");
  for (const std::string& text :
       {reply.Complete("x", "", result), reply.RoleChunk(), reply.DeltaChunk(delta),
        reply.FinishChunk(result), reply.UsageChunk(result)}) {
    ASSERT_OK_AND_ASSIGN(const json::Value v, json::Parse(text));
    EXPECT_EQ(v.as_object().Find("system_fingerprint")->as_string(), "fp_0123456789abcdef")
        << text;
    EXPECT_EQ(v.as_object().Find("model")->as_string(), "alias") << text;
  }
  OpenAiReply text(OpenAiEndpoint::kCompletions, "cmpl-1", 1, "m", false);
  text.set_system_fingerprint("fp_1");
  ASSERT_OK_AND_ASSIGN(const json::Value v, json::Parse(text.TextChunk("y")));
  EXPECT_EQ(v.as_object().Find("system_fingerprint")->as_string(), "fp_1");
}

}  // namespace
}  // namespace tandem
