// A multi-turn Session on a model with sliding-window layers (the gemma2 fixture, window 16):
// a new turn whose context leaves the cached one before what the ring still holds is re-run
// from position 0, and gives what a fresh session gives; one that extends it reuses the cache.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/session.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedModel;

std::vector<int32_t> Generate(Session& session, const std::vector<int32_t>& context, int n,
                              int64_t* reused) {
  std::vector<int32_t> out;
  absl::StatusOr<GenerationResult> r = session.Generate(context, n, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok() && reused != nullptr) *reused = r->stats.reused_tokens;
  return out;
}

TEST(SessionRingTest, ATurnLeavingTheCacheBehindTheRingRestartsFromZeroExactly) {
  ASSERT_OK_AND_ASSIGN(const Model* model, SharedModel("models/fixtures/gemma2-F16.gguf"));
  ASSERT_EQ(model->config().sliding_window, 16);
  ThreadPool pool(2);
  SessionOptions options;
  options.sampler.temperature = 0.0f;
  options.context_size = 512;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::Create(*model, pool, options));
  std::vector<int32_t> context = {1, 15, 300, 42, 7, 99, 250, 3};
  const std::vector<int32_t> first = Generate(*session, context, 200, nullptr);
  ASSERT_EQ(first.size(), 200u);

  // Turn 2 keeps the first 40 positions, then goes elsewhere: the ring forgot position 40's
  // window long ago.
  std::vector<int32_t> second(context.begin(), context.end());
  second.insert(second.end(), first.begin(), first.begin() + 32);
  for (int32_t id : {5, 6, 7, 8, 9, 10}) second.push_back(id);
  int64_t reused = -1;
  const std::vector<int32_t> got = Generate(*session, second, 30, &reused);
  EXPECT_EQ(reused, 0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> fresh, Session::Create(*model, pool, options));
  EXPECT_EQ(got, Generate(*fresh, second, 30, nullptr));

  // Turn 3 extends turn 2: the cache is reused up to its end.
  std::vector<int32_t> third = second;
  third.insert(third.end(), got.begin(), got.end());
  third.push_back(11);
  const std::vector<int32_t> extended = Generate(*session, third, 20, &reused);
  EXPECT_EQ(reused, static_cast<int64_t>(second.size() + got.size()) - 1);
  EXPECT_EQ(extended, Generate(*fresh, third, 20, nullptr));
}

}  // namespace
}  // namespace tandem
