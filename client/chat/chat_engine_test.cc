#include "client/chat/chat_engine.h"

#include <limits>
#include <string>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ChatOptions Greedy(const std::string& model) {
  ChatOptions options;
  absl::StatusOr<std::string> path = testing::SharedFile(model);
  EXPECT_TRUE(path.ok()) << path.status();
  options.model_path = path.ok() ? *path : "";
  options.sampler.temperature = 0.0f;
  options.max_tokens = 32;
  options.threads = 1;
  options.context_size = 512;
  return options;
}

TEST(ChatEngineTest, RawFormatContinuesThePromptLikeTheGoldenOutput) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.format = "raw";
  ASSERT_OK_AND_ASSIGN(auto engine, ChatEngine::Create(options));
  std::string streamed;
  ASSERT_OK_AND_ASSIGN(TurnResult turn, engine->Turn("Once upon a time", [&](absl::string_view t) {
    streamed += std::string(t);
  }));
  EXPECT_EQ(turn.reply, streamed);
  EXPECT_THAT(turn.reply, StartsWith(", there was a little girl named Lily."));
  EXPECT_EQ(turn.generation.stats.generated_tokens, 32);
  EXPECT_FALSE(engine->speculative());
}

// --grammar and friends, in process: every reply matches, with and without a draft.
TEST(ChatEngineTest, EveryReplyMatchesTheConstraint) {
  for (bool draft : {false, true}) {
    ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
    options.format = "raw";
    if (draft) {
      absl::StatusOr<std::string> path =
          testing::SharedFile("models/stories260K/derived/stories-draft-distilled.gguf");
      ASSERT_OK(path.status());
      options.draft_path = *path;
    }
    options.constraint = {ConstraintSpec::Kind::kGrammar,
                          R"(root ::= " and " ("Tim" | "Lily") " went home.")"};
    ASSERT_OK_AND_ASSIGN(auto engine, ChatEngine::Create(options));
    auto ignore = [](absl::string_view) {};
    for (const char* prompt : {"Once upon a time", "One day"}) {
      ASSERT_OK_AND_ASSIGN(TurnResult turn, engine->Turn(prompt, ignore));
      EXPECT_TRUE(turn.reply == " and Tim went home." || turn.reply == " and Lily went home.")
          << "draft " << draft << ": '" << turn.reply << "'";
      EXPECT_EQ(turn.stop_text, "</s>");
    }
  }
}

TEST(ChatEngineTest, AConstraintThatDoesNotCompileIsRefusedAtCreate) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.constraint = {ConstraintSpec::Kind::kGrammar, "root ::= nowhere"};
  EXPECT_THAT(ChatEngine::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nowhere'")));
}

TEST(ChatEngineTest, ModelWithoutTemplateFallsBackToRawAndSaysSo) {
  ASSERT_OK_AND_ASSIGN(auto engine,
                       ChatEngine::Create(Greedy("models/stories260K/stories260K.gguf")));
  EXPECT_EQ(engine->format_name(), "raw");
  ASSERT_EQ(engine->notices().size(), 1u);
  EXPECT_THAT(engine->notices()[0], HasSubstr("no chat template"));
}

TEST(ChatEngineTest, SecondTurnRunsOnlyTheNewTokens) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.format = "chatml";
  options.max_tokens = 8;
  ASSERT_OK_AND_ASSIGN(auto engine, ChatEngine::Create(options));
  auto ignore = [](absl::string_view) {};
  ASSERT_OK_AND_ASSIGN(TurnResult first, engine->Turn("Tell me a story.", ignore));
  EXPECT_EQ(first.generation.stats.reused_tokens, 0);
  ASSERT_OK_AND_ASSIGN(TurnResult second, engine->Turn("And then?", ignore));
  const GenerationStats& s = second.generation.stats;
  // The first turn's prompt and reply come from the cache; only the new text runs.
  EXPECT_GE(s.reused_tokens, first.generation.stats.prompt_tokens);
  EXPECT_LT(s.prompt_tokens, s.reused_tokens);
  engine->Reset();
  ASSERT_OK_AND_ASSIGN(TurnResult after_reset, engine->Turn("Tell me a story.", ignore));
  EXPECT_EQ(after_reset.reply, first.reply);
}

TEST(ChatEngineTest, SpeculativeGreedyReplyEqualsTheTargetAlone) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.format = "raw";
  ASSERT_OK_AND_ASSIGN(auto plain, ChatEngine::Create(options));
  ASSERT_OK_AND_ASSIGN(std::string draft,
                       testing::SharedFile("models/stories260K/derived/stories260K-Q4_0.gguf"));
  options.draft_path = draft;
  ASSERT_OK_AND_ASSIGN(auto speculative, ChatEngine::Create(options));
  EXPECT_TRUE(speculative->speculative());
  auto ignore = [](absl::string_view) {};
  ASSERT_OK_AND_ASSIGN(TurnResult a, plain->Turn("Tom and Sam went to the park", ignore));
  ASSERT_OK_AND_ASSIGN(TurnResult b, speculative->Turn("Tom and Sam went to the park", ignore));
  EXPECT_EQ(a.reply, b.reply);
  EXPECT_GT(b.generation.speculation.drafted, 0);
  EXPECT_GT(b.generation.speculation.acceptance_rate(), 0.5);
}

TEST(ChatEngineTest, BadInputsGetSpecificCodes) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.format = "klingon";
  EXPECT_THAT(ChatEngine::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chatml")));
  options.format = "raw";
  options.model_path = "/no/such/model.gguf";
  EXPECT_THAT(ChatEngine::Create(options), StatusIs(absl::StatusCode::kNotFound));
  options = Greedy("models/stories260K/stories260K.gguf");
  ASSERT_OK_AND_ASSIGN(options.draft_path,
                       testing::SharedFile("models/llama-2-tiny-random/llama-2-tiny-random.gguf"));
  EXPECT_THAT(ChatEngine::Create(options), StatusIs(absl::StatusCode::kFailedPrecondition));
}

// A --threads flag beyond what a pool may start is refused; before, the pool's thread
// vector or std::thread threw and tandem-chat terminated.
TEST(ChatEngineTest, AThreadCountBeyondThePoolLimitIsRefused) {
  ChatOptions options = Greedy("models/stories260K/stories260K.gguf");
  options.threads = std::numeric_limits<int>::max();
  EXPECT_THAT(ChatEngine::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("threads 2147483647")));
}

}  // namespace
}  // namespace tandem
