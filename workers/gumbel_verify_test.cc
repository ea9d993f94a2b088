// A worker under Gumbel coupling (issue 14): the draft sends its guesses without q, and the
// target verifies them without q, keeping exactly the guesses that are its own picks.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/worker_engine.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<WorkerEngine> Engine(WorkerRole role, const std::string& model) {
  absl::StatusOr<std::string> path = testing::SharedFile(model);
  EXPECT_TRUE(path.ok()) << path.status();
  WorkerOptions options;
  options.role = role;
  options.model_path = path.ok() ? *path : "";
  options.threads = 1;
  options.context_size = 256;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

SamplerConfig Gumbel() {
  SamplerConfig config;
  config.temperature = 1.0f;
  config.seed = 77;
  config.coupling = Coupling::kGumbel;
  return config;
}

TEST(GumbelVerifyTest, DraftSendsNoQAndVerifyKeepsOnlyTheTargetsOwnPicks) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  auto draft = Engine(WorkerRole::kDraft, "models/stories260K/derived/stories260K-Q4_0.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(draft, nullptr);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};  // the pending token last
  const std::vector<int32_t> before(prompt.begin(), prompt.end() - 1);
  ASSERT_OK_AND_ASSIGN(int64_t d, draft->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(DraftOutput guesses, draft->Draft(d, 0, prompt, 8, Gumbel(), nullptr));
  ASSERT_EQ(guesses.guesses.size(), 8u);
  for (const SparseDistribution& q : guesses.q) EXPECT_TRUE(q.ids.empty());

  // The standard rule needs q: the same request is refused.
  ASSERT_OK_AND_ASSIGN(int64_t t, target->OpenSession(0));
  SamplerConfig standard = Gumbel();
  standard.coupling = Coupling::kStandard;
  EXPECT_THAT(
      target->Verify(t, 0, before, prompt.back(), guesses.guesses, guesses.q, standard, nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("guess 0")));

  ASSERT_OK_AND_ASSIGN(
      AcceptanceResult verdict,
      target->Verify(t, 0, before, prompt.back(), guesses.guesses, guesses.q, Gumbel(), nullptr));
  EXPECT_GT(verdict.accepted, 0) << "the Q4_0 draft shares most picks with its target";
  // The target alone, one token per verify without guesses, in another session.
  ASSERT_OK_AND_ASSIGN(int64_t alone, target->OpenSession(0));
  std::vector<int32_t> sequence = prompt;
  for (int32_t i = 0; i <= verdict.accepted; ++i) {
    const std::vector<int32_t> head(sequence.begin(), sequence.end() - 1);
    ASSERT_OK_AND_ASSIGN(AcceptanceResult own, target->Verify(alone, 0, head, sequence.back(), {},
                                                              {}, Gumbel(), nullptr));
    const int32_t expected = i < verdict.accepted ? guesses.guesses[i] : verdict.next_token;
    EXPECT_EQ(own.next_token, expected) << "token " << i;
    sequence.push_back(own.next_token);
  }
}

}  // namespace
}  // namespace tandem
