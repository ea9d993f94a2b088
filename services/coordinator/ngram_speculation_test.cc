// The coordinator's n-gram drafter (speculation.method = NGRAM, or --ngram-fallback without a
// draft worker): on a prompt that repeats itself its guesses are accepted, and greedy output is
// exactly the target alone's.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

constexpr char kRepetitive[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. Once upon a time, there was a little girl named Lily. She loved to";

struct Reply {
  std::string text;
  v1::SpeculationStats speculation;
};

Reply Generate(Coordinator& coordinator, const v1::GenerateRequest& request) {
  Reply reply;
  const absl::Status status = coordinator.Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_delta()) reply.text += r.delta().text();
        if (r.has_final()) reply.speculation = r.final().speculation();
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(60));
  EXPECT_OK(status);
  return reply;
}

v1::GenerateRequest Greedy(v1::SpeculationMethod method, bool enabled = true) {
  v1::GenerateRequest request;
  request.set_text(kRepetitive);
  request.mutable_sampling()->set_temperature(0);
  request.set_max_tokens(64);
  request.mutable_speculation()->set_enabled(enabled);
  request.mutable_speculation()->set_method(method);
  return request;
}

struct NgramCase {
  const char* name;
  v1::SpeculationMethod method;
  bool fallback;    // the coordinator's --ngram-fallback
  bool uses_ngram;  // guesses expected
};

// A stories260K target worker and a coordinator over it alone; `coordinator` is null (after a
// test failure) if either did not start.
struct OneTargetStack {
  explicit OneTargetStack(const CoordinatorOptions& options) : metrics(registry) {
    target.Serve();
    if (target.server == nullptr) return;
    std::vector<std::unique_ptr<WorkerClient>> targets;
    targets.push_back(target.Client("target"));
    absl::StatusOr<std::unique_ptr<Coordinator>> created =
        Coordinator::Create(options, std::move(targets), {}, &metrics);
    EXPECT_OK(created.status());
    if (created.ok()) coordinator = std::move(*created);
  }
  testing::TestWorker target{WorkerRole::kTarget, "models/stories260K/stories260K.gguf"};
  prometheus::Registry registry;
  CoordinatorMetrics metrics;
  std::unique_ptr<Coordinator> coordinator;
};

class NgramSpeculationTest : public ::testing::TestWithParam<NgramCase> {};

TEST_P(NgramSpeculationTest, GreedyOutputIsTheTargetAlonesAndGuessesAreKept) {
  CoordinatorOptions options;
  options.ngram_fallback = GetParam().fallback;
  OneTargetStack stack(options);
  ASSERT_NE(stack.coordinator, nullptr);
  Coordinator* coordinator = stack.coordinator.get();

  const Reply alone =
      Generate(*coordinator, Greedy(v1::SPECULATION_METHOD_UNSPECIFIED, /*enabled=*/false));
  EXPECT_EQ(alone.speculation.drafted_tokens(), 0);
  const Reply got = Generate(*coordinator, Greedy(GetParam().method));
  EXPECT_EQ(got.text, alone.text);
  if (GetParam().uses_ngram) {
    EXPECT_GT(got.speculation.drafted_tokens(), 0);
    EXPECT_GT(got.speculation.accepted_tokens(), 0);
    EXPECT_GT(got.speculation.tokens_per_round(), 1.5) << "text that repeats is guessed well";
  } else {
    EXPECT_EQ(got.speculation.drafted_tokens(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, NgramSpeculationTest,
    ::testing::Values(
        NgramCase{"ngram", v1::SPECULATION_METHOD_NGRAM, false, true},
        NgramCase{"unspecified_with_fallback", v1::SPECULATION_METHOD_UNSPECIFIED, true, true},
        NgramCase{"unspecified_without_fallback", v1::SPECULATION_METHOD_UNSPECIFIED, false, false},
        NgramCase{"draft_model_only", v1::SPECULATION_METHOD_DRAFT_MODEL, true, false}),
    [](const auto& info) { return std::string(info.param.name); });

// The coordinator's --draft-tokens (4) budgets a draft model; n-gram rounds of a request that
// names no k may guess up to SpeculationDefaults::kNgramDraftTokens, as far as the match
// carries them.
TEST(NgramSpeculationTest, AnNgramRequestNamingNoKGuessesPastTheDraftModelsK) {
  CoordinatorOptions options;
  ASSERT_EQ(options.default_draft_tokens, 4);
  OneTargetStack stack(options);
  ASSERT_NE(stack.coordinator, nullptr);
  v1::GenerateRequest request = Greedy(v1::SPECULATION_METHOD_NGRAM);
  request.set_max_tokens(256);
  const Reply got = Generate(*stack.coordinator, request);
  // accepted_per_position[i]: rounds whose guess i + 1 was kept.
  ASSERT_GT(got.speculation.accepted_per_position_size(), 4);
  EXPECT_GT(got.speculation.accepted_per_position(4), 0) << "a fifth guess was kept";
}

TEST(NgramSpeculationTest, AnUnknownMethodIsInvalidArgument) {
  OneTargetStack stack(CoordinatorOptions{});
  ASSERT_NE(stack.coordinator, nullptr);
  Coordinator* coordinator = stack.coordinator.get();
  v1::GenerateRequest request = Greedy(v1::SPECULATION_METHOD_NGRAM);
  request.mutable_speculation()->set_method(static_cast<v1::SpeculationMethod>(7));
  const absl::Status status = coordinator->Generate(
      request, [](const v1::GenerateResponse&) { return true; }, [] { return false; },
      absl::Now() + absl::Seconds(10));
  EXPECT_THAT(status, tandem::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                ::testing::HasSubstr("speculation.method 7")));
}

}  // namespace
}  // namespace tandem
