// Drafter-invariant sampling through the coordinator and real workers over loopback gRPC
// (issue 14): with speculation.coupling = COUPLING_GUMBEL, seeded sampled output equals the
// target alone with that seed for every draft worker, every k, the n-gram drafter and a draft
// that dies mid-request; with the standard rule it does not.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::tandem::testing::TestWorker;

constexpr char kTarget[] = "models/stories260K/stories260K.gguf";
const char* const kDrafts[] = {
    "models/stories260K/derived/stories260K-Q8_0.gguf",
    "models/stories260K/derived/stories260K-Q4_0.gguf",
    "models/stories260K/derived/stories260K-first4layers.gguf",
    "models/stories260K/derived/stories-draft-distilled.gguf",
};

// A coordinator over the target worker and, if given, one draft worker (TCP clients).
struct CoordinatorStack {
  CoordinatorStack(const TestWorker& target, const TestWorker* draft) : metrics(registry) {
    std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
    targets.push_back(target.TcpClient());
    if (draft != nullptr) drafts.push_back(draft->TcpClient());
    absl::StatusOr<std::unique_ptr<Coordinator>> created =
        Coordinator::Create(CoordinatorOptions{}, std::move(targets), std::move(drafts), &metrics);
    EXPECT_OK(created.status());
    if (created.ok()) coordinator = std::move(*created);
  }
  prometheus::Registry registry;
  CoordinatorMetrics metrics;
  std::unique_ptr<Coordinator> coordinator;
};

struct Reply {
  std::vector<int32_t> tokens;
  v1::SpeculationStats speculation;
};

// Runs `request`; `after_first_delta` (if any) runs once, when the first text has streamed.
Reply Generate(Coordinator& coordinator, const v1::GenerateRequest& request,
               const std::function<void()>& after_first_delta = nullptr) {
  Reply reply;
  bool called = false;
  const absl::Status status = coordinator.Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_delta()) {
          reply.tokens.insert(reply.tokens.end(), r.delta().token_ids().begin(),
                              r.delta().token_ids().end());
          if (after_first_delta && !called && reply.tokens.size() >= 8) {
            called = true;
            after_first_delta();
          }
        }
        if (r.has_final()) reply.speculation = r.final().speculation();
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(120));
  EXPECT_OK(status);
  return reply;
}

v1::GenerateRequest Sampled(v1::Coupling coupling, uint64_t seed, float temperature, float top_p,
                            int32_t k, bool speculate = true) {
  v1::GenerateRequest request;
  request.set_text("Once upon a time");
  request.set_max_tokens(64);
  request.set_ignore_eos(true);
  v1::SamplingParams* sampling = request.mutable_sampling();
  sampling->set_temperature(temperature);
  sampling->set_top_p(top_p);
  sampling->set_top_k(0);
  sampling->set_min_p(0);
  sampling->set_seed(seed);
  request.mutable_speculation()->set_enabled(speculate);
  request.mutable_speculation()->set_draft_tokens(k);
  request.mutable_speculation()->set_coupling(coupling);
  return request;
}

class DrafterInvarianceServiceTest : public ::testing::TestWithParam<v1::Coupling> {
 protected:
  void SetUp() override {
    target_.Serve();
    ASSERT_NE(target_.server, nullptr);
  }
  TestWorker target_{WorkerRole::kTarget, kTarget};
};

TEST_P(DrafterInvarianceServiceTest, SeededOutputEqualsTheTargetAloneForEveryDraftAndK) {
  const v1::Coupling coupling = GetParam();
  std::vector<std::unique_ptr<TestWorker>> drafts;
  std::vector<std::unique_ptr<CoordinatorStack>> stacks;
  for (const char* path : kDrafts) {
    drafts.push_back(std::make_unique<TestWorker>(WorkerRole::kDraft, path));
    drafts.back()->Serve();
    ASSERT_NE(drafts.back()->server, nullptr) << path;
    stacks.push_back(std::make_unique<CoordinatorStack>(target_, drafts.back().get()));
    ASSERT_NE(stacks.back()->coordinator, nullptr) << path;
  }
  CoordinatorStack alone_stack(target_, nullptr);
  ASSERT_NE(alone_stack.coordinator, nullptr);
  int runs = 0, equal = 0;
  for (uint64_t seed : {5u, 23u}) {
    for (const auto& [temperature, top_p] : {std::pair{1.0f, 1.0f}, std::pair{0.8f, 0.9f}}) {
      const Reply alone =
          Generate(*alone_stack.coordinator, Sampled(coupling, seed, temperature, top_p, 1, false));
      ASSERT_EQ(alone.tokens.size(), 64u);
      EXPECT_EQ(alone.speculation.drafted_tokens(), 0);
      for (size_t d = 0; d < stacks.size(); ++d) {
        for (int32_t k : {1, 4, 8}) {
          const Reply got =
              Generate(*stacks[d]->coordinator, Sampled(coupling, seed, temperature, top_p, k));
          EXPECT_GT(got.speculation.drafted_tokens(), 0);
          ++runs;
          equal += got.tokens == alone.tokens;
          if (coupling == v1::COUPLING_GUMBEL) {
            EXPECT_EQ(got.tokens, alone.tokens)
                << "seed " << seed << " T " << temperature << " " << kDrafts[d] << " k=" << k;
          }
        }
      }
      // The coordinator's n-gram drafter is one more draft.
      v1::GenerateRequest ngram = Sampled(coupling, seed, temperature, top_p, 4);
      ngram.mutable_speculation()->set_method(v1::SPECULATION_METHOD_NGRAM);
      if (coupling == v1::COUPLING_GUMBEL) {
        EXPECT_EQ(Generate(*alone_stack.coordinator, ngram).tokens, alone.tokens);
      }
    }
  }
  if (coupling != v1::COUPLING_GUMBEL) {
    EXPECT_LT(equal, runs / 2) << "the standard rule";
  }
}

// Gumbel: the text is the target alone's. Standard: it is not (the draft's rounds drew it).
TEST_P(DrafterInvarianceServiceTest, ADraftThatDiesMidRequestLeavesTheTargetAlonesText) {
  const v1::Coupling coupling = GetParam();
  TestWorker draft(WorkerRole::kDraft, kDrafts[3]);
  draft.Serve();
  ASSERT_NE(draft.server, nullptr);
  CoordinatorStack stack(target_, &draft);
  CoordinatorStack alone_stack(target_, nullptr);
  ASSERT_NE(stack.coordinator, nullptr);
  ASSERT_NE(alone_stack.coordinator, nullptr);
  const Reply alone =
      Generate(*alone_stack.coordinator, Sampled(coupling, 41, 0.9f, 0.95f, 1, false));
  const Reply got = Generate(*stack.coordinator, Sampled(coupling, 41, 0.9f, 0.95f, 4),
                             [&] { draft.server->Shutdown(std::chrono::system_clock::now()); });
  EXPECT_TRUE(got.speculation.draft_failed());
  EXPECT_GT(got.speculation.drafted_tokens(), 0);
  if (coupling == v1::COUPLING_GUMBEL) {
    EXPECT_EQ(got.tokens, alone.tokens);
  } else {
    EXPECT_NE(got.tokens, alone.tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(Couplings, DrafterInvarianceServiceTest,
                         ::testing::Values(v1::COUPLING_STANDARD, v1::COUPLING_GUMBEL),
                         [](const auto& info) {
                           return info.param == v1::COUPLING_GUMBEL ? "Gumbel" : "Standard";
                         });

TEST_F(DrafterInvarianceServiceTest, AnUnknownCouplingIsInvalidArgument) {
  CoordinatorStack stack(target_, nullptr);
  ASSERT_NE(stack.coordinator, nullptr);
  const absl::Status status = stack.coordinator->Generate(
      Sampled(static_cast<v1::Coupling>(7), 1, 1.0f, 1.0f, 4),
      [](const v1::GenerateResponse&) { return true; }, [] { return false; },
      absl::Now() + absl::Seconds(10));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               ::testing::HasSubstr("speculation.coupling 7")));
}

}  // namespace
}  // namespace tandem
