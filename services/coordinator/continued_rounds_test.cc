// Without a draft, a busy target continues alone (RoundParams::continue_tokens): eight
// concurrent requests through the coordinator — greedy and seeded, with stop strings and
// odd token limits — give exactly the text, token counts and finish reasons of the same
// requests one at a time with one token per verify, and the target did continue.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

struct Reply {
  std::string text;
  int32_t generated = -1;
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
};

bool operator==(const Reply& a, const Reply& b) {
  return a.text == b.text && a.generated == b.generated && a.finish == b.finish;
}

void PrintTo(const Reply& r, std::ostream* os) {
  *os << "'" << r.text << "' (" << r.generated << " tokens, finish " << r.finish << ")";
}

v1::GenerateRequest RequestFor(int i) {
  static const char* kPrompts[] = {"Once upon a time", "Lily",   "The dog", "One day",
                                   "Tom and Sue",      "A bird", "The sun", "Mom said"};
  v1::GenerateRequest request;
  request.set_text(kPrompts[i % 8]);
  request.mutable_sampling()->set_temperature(i % 2 == 0 ? 0.0f : 0.9f);
  request.mutable_sampling()->set_seed(40 + i);
  request.set_max_tokens(21 + 5 * i);
  if (i % 3 == 0) request.add_stop_strings(" the");
  request.mutable_speculation()->set_enabled(false);
  return request;
}

Reply Generate(Coordinator& coordinator, const v1::GenerateRequest& request) {
  Reply reply;
  const absl::Status status = coordinator.Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_delta()) reply.text += r.delta().text();
        if (r.has_final()) {
          reply.generated = r.final().usage().generated_tokens();
          reply.finish = r.final().finish_reason();
        }
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(120));
  EXPECT_OK(status);
  return reply;
}

std::unique_ptr<Coordinator> CoordinatorOver(const testing::TestWorker& target, int32_t continued,
                                             CoordinatorMetrics* metrics) {
  std::vector<std::unique_ptr<WorkerClient>> targets;
  targets.push_back(target.Client("target"));
  CoordinatorOptions options;
  options.continue_tokens = continued;
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator =
      Coordinator::Create(options, std::move(targets), {}, metrics);
  EXPECT_OK(coordinator.status());
  return coordinator.ok() ? std::move(*coordinator) : nullptr;
}

TEST(ContinuedRoundsTest, ConcurrentRequestsEqualTheirOneTokenRoundsOneAtATime) {
  constexpr int kRequests = 8;
  testing::TestWorker target(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 16);
  target.Serve();
  ASSERT_NE(target.server, nullptr);
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);

  std::vector<Reply> expected;
  {
    std::unique_ptr<Coordinator> plain = CoordinatorOver(target, 0, &metrics);
    ASSERT_NE(plain, nullptr);
    for (int i = 0; i < kRequests; ++i) expected.push_back(Generate(*plain, RequestFor(i)));
  }
  EXPECT_EQ(target.metrics->continued_tokens.Value(), 0);
  bool some_stop = false;
  for (const Reply& r : expected) some_stop |= r.finish == v1::FINISH_REASON_STOP_STRING;
  EXPECT_TRUE(some_stop) << "no request met its stop string: the case tests nothing";

  std::unique_ptr<Coordinator> continuing = CoordinatorOver(target, 3, &metrics);
  ASSERT_NE(continuing, nullptr);
  // Rounds of eight at once until the target has continued (each round is short).
  for (int round = 0; round < 4 && target.metrics->continued_tokens.Value() == 0; ++round) {
    std::vector<Reply> got(kRequests);
    std::vector<std::thread> threads;
    for (int i = 0; i < kRequests; ++i) {
      threads.emplace_back([&, i] { got[i] = Generate(*continuing, RequestFor(i)); });
    }
    for (std::thread& t : threads) t.join();
    for (int i = 0; i < kRequests; ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
  }
  EXPECT_GT(target.metrics->continued_tokens.Value(), 0);
}

}  // namespace
}  // namespace tandem
