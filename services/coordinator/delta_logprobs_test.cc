#include "services/coordinator/delta_logprobs.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct CheckCase {
  const char* name;
  bool logprobs;
  int32_t top;
  absl::StatusCode code;
  const char* message;
};

TEST(CheckLogprobsRequestTest, AcceptsZeroToTwentyWithLogprobsOnly) {
  const CheckCase cases[] = {
      {"off", false, 0, absl::StatusCode::kOk, ""},
      {"on", true, 0, absl::StatusCode::kOk, ""},
      {"twenty", true, 20, absl::StatusCode::kOk, ""},
      {"twenty_one", true, 21, absl::StatusCode::kInvalidArgument, "top_logprobs 21 is outside"},
      {"negative", true, -1, absl::StatusCode::kInvalidArgument, "top_logprobs -1 is outside"},
      {"top_without_logprobs", false, 2, absl::StatusCode::kInvalidArgument,
       "top_logprobs needs logprobs"},
  };
  for (const CheckCase& c : cases) {
    SCOPED_TRACE(c.name);
    v1::GenerateRequest request;
    request.set_logprobs(c.logprobs);
    request.set_top_logprobs(c.top);
    if (c.code == absl::StatusCode::kOk) {
      EXPECT_THAT(CheckLogprobsRequest(request), IsOk());
    } else {
      EXPECT_THAT(CheckLogprobsRequest(request), StatusIs(c.code, HasSubstr(c.message)));
    }
  }
}

TEST(AppendLogprobsTest, AddsEveryTokensBytesAndLeavesUnknownIdsBare) {
  const std::vector<std::string> bytes = {"a", "\xe2\x82", " the"};
  v1::TokenLogprobs from;
  from.mutable_token()->set_token_id(2);
  from.mutable_token()->set_logprob(-0.5f);
  from.add_top()->set_token_id(1);
  from.add_top()->set_token_id(9);  // not in the vocabulary
  v1::TokenDelta delta;
  AppendLogprobs(from, bytes, &delta);
  ASSERT_EQ(delta.logprobs_size(), 1);
  const v1::TokenLogprobs& got = delta.logprobs(0);
  EXPECT_EQ(got.token().token_bytes(), " the");
  EXPECT_EQ(got.token().logprob(), -0.5f);
  ASSERT_EQ(got.top_size(), 2);
  EXPECT_EQ(got.top(0).token_bytes(), "\xe2\x82");
  EXPECT_EQ(got.top(1).token_bytes(), "");
}

}  // namespace
}  // namespace tandem
