#include "core/generation/vocab_compatibility.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/generation_test_util.h"
#include "core/model/gguf_builder_test_util.h"
#include "core/model/mapped_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::GgufBuilder;
using ::tandem::testing::IsOk;
using ::tandem::testing::SharedModel;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct Vocabulary {
  std::string model = "llama";
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "b", "c"};
  uint32_t bos = 1;
  uint32_t eos = 2;
};

// A parsed GGUF with the bytes it views (FromBuffer borrows them).
struct BuiltGguf {
  std::vector<uint8_t> bytes;
  std::optional<GgufFile> file;
};

std::unique_ptr<BuiltGguf> Build(const Vocabulary& v) {
  auto built = std::make_unique<BuiltGguf>();
  built->bytes = GgufBuilder()
                     .AddString("tokenizer.ggml.model", v.model)
                     .AddStringArray("tokenizer.ggml.tokens", v.tokens)
                     .AddUint32("tokenizer.ggml.bos_token_id", v.bos)
                     .AddUint32("tokenizer.ggml.eos_token_id", v.eos)
                     .Build();
  absl::StatusOr<GgufFile> file = GgufFile::Parse(MappedFile::FromBuffer(built->bytes));
  EXPECT_THAT(file, IsOk());
  if (file.ok()) built->file.emplace(std::move(*file));
  return built;
}

struct CompatibilityCase {
  std::string name;
  Vocabulary draft;
  std::string message;  // empty: compatible
};

TEST(CheckGgufVocabulariesCompatibleTest, SaysWhatDiffers) {
  const auto with = [](auto set) {
    Vocabulary v;
    set(v);
    return v;
  };
  const std::vector<CompatibilityCase> cases = {
      {"identical", Vocabulary(), ""},
      {"draft has extra tokens", with([](Vocabulary& v) { v.tokens.push_back("d"); }), ""},
      {"draft lacks the last tokens", with([](Vocabulary& v) { v.tokens.pop_back(); }), ""},
      {"a token text differs", with([](Vocabulary& v) { v.tokens[4] = "B"; }),
       "token 4 is \"b\" in the target and \"B\" in the draft"},
      {"tokenizer type differs", with([](Vocabulary& v) { v.model = "gpt2"; }),
       "tokenizer.ggml.model is llama in the target, gpt2 in the draft"},
      {"bos differs", with([](Vocabulary& v) { v.bos = 3; }),
       "tokenizer.ggml.bos_token_id is 1 in the target, 3 in the draft"},
      {"eos differs", with([](Vocabulary& v) { v.eos = 0; }),
       "tokenizer.ggml.eos_token_id is 2 in the target, 0 in the draft"},
  };
  const std::unique_ptr<BuiltGguf> built_target = Build(Vocabulary());
  ASSERT_TRUE(built_target->file.has_value());
  const GgufFile& target = *built_target->file;
  for (const CompatibilityCase& c : cases) {
    const std::unique_ptr<BuiltGguf> built_draft = Build(c.draft);
    ASSERT_TRUE(built_draft->file.has_value());
    const GgufFile& draft = *built_draft->file;
    if (c.message.empty()) {
      EXPECT_THAT(CheckGgufVocabulariesCompatible(target, draft), IsOk()) << c.name;
    } else {
      EXPECT_THAT(CheckGgufVocabulariesCompatible(target, draft),
                  StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(c.message)))
          << c.name;
    }
  }
}

TEST(CheckDraftCompatibleTest, EveryDerivedDraftFitsStories260K) {
  ASSERT_OK_AND_ASSIGN(const Model* target, SharedModel(testing::kTargetPath));
  for (const char* draft_path :
       {"models/stories260K/derived/stories260K-Q8_0.gguf",
        "models/stories260K/derived/stories260K-Q4_0.gguf",
        "models/stories260K/derived/stories260K-first4layers.gguf",
        "models/stories260K/derived/stories-draft-distilled.gguf", "models/stories260K/hf"}) {
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(draft_path));
    EXPECT_THAT(CheckDraftCompatible(*target, *draft), IsOk()) << draft_path;
  }
}

TEST(CheckDraftCompatibleTest, VocabularySizesMoreThan128ApartAreRefused) {
  ASSERT_OK_AND_ASSIGN(const Model* target, SharedModel(testing::kTargetPath));
  ASSERT_OK_AND_ASSIGN(const Model* other,
                       SharedModel("models/llama-2-tiny-random/llama-2-tiny-random.gguf"));
  EXPECT_THAT(CheckDraftCompatible(*target, *other),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the target's vocabulary has 512 tokens and the draft's 32000 "
                                 "(more than 128 apart)")));
}

}  // namespace
}  // namespace tandem
