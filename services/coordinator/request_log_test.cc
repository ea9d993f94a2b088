#include "services/coordinator/request_log.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::MatchesRegex;

v1::GenerateResponse Delta(int tokens) {
  v1::GenerateResponse r;
  for (int i = 0; i < tokens; ++i) r.mutable_delta()->add_token_ids(i);
  return r;
}

TEST(RequestLogTest, OkLineNamesSessionTokensFinishAndSeconds) {
  v1::GenerateRequest request;
  RequestLog log(request);
  log.Saw(Delta(3));
  log.Saw(Delta(2));
  v1::GenerateResponse final;
  final.mutable_final()->set_session_id("oneoff-7");
  final.mutable_final()->set_finish_reason(v1::FINISH_REASON_LENGTH);
  log.Saw(final);
  EXPECT_THAT(log.Line(absl::OkStatus()),
              MatchesRegex("request [0-9]+ session=oneoff-7 outcome=ok tokens=5 "
                           "finish=FINISH_REASON_LENGTH seconds=[0-9]+\\.[0-9]{3}"));
}

TEST(RequestLogTest, AConstrainedRequestsLineNamesTheKindAndTheForcedTokens) {
  v1::GenerateRequest request;
  request.mutable_constraint()->mutable_json_schema()->set_schema("{}");
  RequestLog log(request);
  log.Saw(Delta(4));
  v1::GenerateResponse final;
  final.mutable_final()->set_session_id("oneoff-8");
  final.mutable_final()->set_finish_reason(v1::FINISH_REASON_STOP_TOKEN);
  final.mutable_final()->mutable_speculation()->set_forced_tokens(3);
  log.Saw(final);
  EXPECT_THAT(log.Line(absl::OkStatus()),
              MatchesRegex("request [0-9]+ session=oneoff-8 constraint=json_schema outcome=ok "
                           "tokens=4 finish=FINISH_REASON_STOP_TOKEN forced=3 "
                           "seconds=[0-9]+\\.[0-9]{3}"));
  request.mutable_constraint()->set_regex("a+");
  EXPECT_THAT(
      RequestLog(request).Line(absl::InvalidArgumentError("regex: bad")),
      MatchesRegex("request [0-9]+ session=- constraint=regex outcome=invalid_argument .*"));
}

TEST(RequestLogTest, ErrorLineKeepsTheRequestSessionAndTheFullMessage) {
  v1::GenerateRequest request;
  request.set_session_id("chat-1");
  RequestLog log(request);
  log.Saw(Delta(4));
  EXPECT_THAT(log.Line(absl::UnavailableError("worker 10.0.0.7:50051 failed: stream ended")),
              MatchesRegex("request [0-9]+ session=chat-1 outcome=unavailable tokens=4 "
                           "seconds=[0-9.]+: worker 10.0.0.7:50051 failed: stream ended"));
}

TEST(RequestLogTest, EachRequestGetsItsOwnNumber) {
  v1::GenerateRequest request;
  RequestLog a(request), b(request);
  EXPECT_NE(a.Line(absl::OkStatus()).substr(0, 12), b.Line(absl::OkStatus()).substr(0, 12));
}

}  // namespace
}  // namespace tandem
