#include "services/coordinator/coordinator_options.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/command_line_test_util.h"
#include "core/base/status_matchers.h"
#include "core/generation/speculation_defaults.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<CoordinatorProcessOptions> Parse(std::vector<std::string> args) {
  return testing::FromCommandLine(CoordinatorOptionsFromFlags, std::move(args));
}

TEST(CoordinatorOptionsTest, TheDefaults) {
  ASSERT_OK_AND_ASSIGN(CoordinatorProcessOptions o, Parse({"--target", "127.0.0.1:7001"}));
  const CoordinatorOptions& c = o.coordinator;
  EXPECT_THAT(c.targets, ElementsAre("127.0.0.1:7001"));
  EXPECT_TRUE(c.drafts.empty());
  EXPECT_EQ(c.default_draft_tokens, SpeculationDefaults::kDraftTokens);
  EXPECT_FALSE(c.adaptive_draft);
  EXPECT_EQ(c.max_sessions, 64);
  EXPECT_EQ(c.default_max_tokens, SpeculationDefaults::kServerMaxTokens);
  EXPECT_EQ(c.continue_tokens, SpeculationDefaults::kContinueTokens);
  EXPECT_FALSE(c.ngram_fallback);
  EXPECT_TRUE(c.local_tokenizer);
  EXPECT_EQ(c.worker_wait, absl::Seconds(120));
  EXPECT_EQ(c.max_queued_requests, 256);
  EXPECT_EQ(c.max_queue_wait, absl::Seconds(300));
  EXPECT_EQ(c.session_idle, absl::Seconds(300));
  EXPECT_EQ(c.limits.max_prompt_bytes, 1 << 20);
  EXPECT_EQ(c.pool.draft_deadline.floor, absl::Milliseconds(50));
  EXPECT_EQ(c.pool.draft_deadline.multiple, 4);
  EXPECT_EQ(c.pool.draft_deadline.ceiling, absl::Seconds(10));
  EXPECT_EQ(c.pool.draft_deadline.cold_deadline, absl::Seconds(2));
  EXPECT_EQ(c.pool.backoff.initial, absl::Seconds(1));
  EXPECT_EQ(c.pool.backoff.max, absl::Seconds(60));
  EXPECT_EQ(c.pool.probe_interval, absl::Milliseconds(500));
  EXPECT_EQ(c.pool.probe_timeout, absl::Seconds(1));
  EXPECT_EQ(c.target_timeout, absl::Seconds(30));
  EXPECT_EQ(c.failover_wait, absl::Seconds(30));
  EXPECT_EQ(c.pool.reconnect_grace, absl::Seconds(5));
  EXPECT_EQ(c.pool.draft_deadline.liveness_floor, absl::Seconds(1));
  EXPECT_EQ(c.pool.draft_deadline.liveness_multiple, 16);
  EXPECT_EQ(c.max_request_time, absl::Seconds(600));
  EXPECT_EQ(c.worker_client.keepalive_time, absl::Seconds(10));
  EXPECT_EQ(c.worker_client.credentials, nullptr);
  EXPECT_EQ(c.resolve_interval, absl::Seconds(10));
  EXPECT_EQ(o.server.listen, "127.0.0.1:0");
  EXPECT_EQ(o.server.metrics_listen, "");
  EXPECT_EQ(o.server.health_listen, "");
  EXPECT_EQ(o.server.max_message_bytes, 4 << 20);
  EXPECT_EQ(o.server.drain_notice, absl::Seconds(1));
  EXPECT_EQ(o.server.credentials, nullptr);
  EXPECT_EQ(o.http.listen, "");
  EXPECT_EQ(o.http.threads, 0);
  const HttpServerOptions front;  // the front's limits are its own defaults
  EXPECT_EQ(o.http.max_header_bytes, front.max_header_bytes);
  EXPECT_EQ(o.http.max_header_count, front.max_header_count);
  EXPECT_EQ(o.http.request_timeout, front.request_timeout);
  EXPECT_EQ(o.http.idle_timeout, front.idle_timeout);
  EXPECT_EQ(o.http.max_connections, front.max_connections);
  EXPECT_EQ(o.http.max_connections_per_address, front.max_connections_per_address);
  EXPECT_EQ(o.http.max_buffered_body_bytes, front.max_buffered_body_bytes);
  EXPECT_EQ(o.tls_cert, "");
  EXPECT_EQ(o.tls_key, "");
  EXPECT_EQ(o.tls_ca, "");
  EXPECT_EQ(o.worker_tls_cert, "");
  EXPECT_EQ(o.worker_tls_key, "");
  EXPECT_EQ(o.api_keys_file, "");
  EXPECT_EQ(o.drain, absl::Seconds(10));
  EXPECT_EQ(o.verbosity, 0);
}

TEST(CoordinatorOptionsTest, EveryFlagReachesItsField) {
  ASSERT_OK_AND_ASSIGN(CoordinatorProcessOptions o, Parse({"--target",
                                                           "a:1,,b:2",
                                                           "--draft=dns:///drafts:7000",
                                                           "--listen",
                                                           "0.0.0.0:50051",
                                                           "--http-listen",
                                                           "127.0.0.1:8080",
                                                           "--http-threads",
                                                           "5",
                                                           "--metrics-listen",
                                                           "127.0.0.1:9100",
                                                           "--health-listen",
                                                           "127.0.0.1:50052",
                                                           "--draft-tokens",
                                                           "auto",
                                                           "--max-sessions",
                                                           "7",
                                                           "--max-queued-requests",
                                                           "0",
                                                           "--max-queue-wait-seconds",
                                                           "2",
                                                           "--session-idle-seconds",
                                                           "30",
                                                           "--max-prompt-bytes",
                                                           "1000",
                                                           "--max-message-bytes",
                                                           "2000",
                                                           "--max-tokens",
                                                           "99",
                                                           "--ngram-fallback",
                                                           "--nolocal-tokenizer",
                                                           "--continue-tokens",
                                                           "0",
                                                           "--worker-wait-seconds",
                                                           "5",
                                                           "--drain-seconds",
                                                           "3",
                                                           "--drain-notice-seconds",
                                                           "0.5",
                                                           "--draft-deadline-floor-ms",
                                                           "20",
                                                           "--draft-deadline-multiple",
                                                           "6",
                                                           "--draft-deadline-max-ms",
                                                           "900",
                                                           "--draft-cold-deadline-ms",
                                                           "300",
                                                           "--draft-backoff-ms",
                                                           "100",
                                                           "--draft-backoff-max-ms",
                                                           "400",
                                                           "--target-timeout-seconds",
                                                           "7",
                                                           "--failover-wait-seconds",
                                                           "0",
                                                           "--request-timeout-seconds",
                                                           "60",
                                                           "--reconnect-grace-seconds",
                                                           "2",
                                                           "--draft-liveness-floor-ms",
                                                           "500",
                                                           "--draft-liveness-multiple",
                                                           "8",
                                                           "--health-interval-ms",
                                                           "250",
                                                           "--health-timeout-ms",
                                                           "750",
                                                           "--resolve-interval-seconds",
                                                           "2",
                                                           "--keepalive-seconds",
                                                           "1",
                                                           "--tls-cert",
                                                           "c.pem",
                                                           "--tls-key",
                                                           "k.pem",
                                                           "--tls-ca",
                                                           "ca.pem",
                                                           "--worker-tls-cert",
                                                           "wc.pem",
                                                           "--worker-tls-key",
                                                           "wk.pem",
                                                           "--api-keys-file",
                                                           "keys.txt",
                                                           "-v",
                                                           "1"}));
  const CoordinatorOptions& c = o.coordinator;
  EXPECT_THAT(c.targets, ElementsAre("a:1", "b:2"));
  EXPECT_THAT(c.drafts, ElementsAre("dns:///drafts:7000"));
  EXPECT_TRUE(c.adaptive_draft);
  EXPECT_EQ(c.default_draft_tokens, SpeculationDefaults::kDraftTokens);  // auto's first k
  EXPECT_EQ(c.max_sessions, 7);
  EXPECT_EQ(c.max_queued_requests, 0);
  EXPECT_EQ(c.max_queue_wait, absl::Seconds(2));
  EXPECT_EQ(c.session_idle, absl::Seconds(30));
  EXPECT_EQ(c.limits.max_prompt_bytes, 1000);
  EXPECT_EQ(o.server.max_message_bytes, 2000);
  EXPECT_EQ(c.default_max_tokens, 99);
  EXPECT_TRUE(c.ngram_fallback);
  EXPECT_FALSE(c.local_tokenizer);
  EXPECT_EQ(c.continue_tokens, 0);
  EXPECT_EQ(c.worker_wait, absl::Seconds(5));
  EXPECT_EQ(o.drain, absl::Seconds(3));
  EXPECT_EQ(o.server.drain_notice, absl::Milliseconds(500));
  EXPECT_EQ(c.pool.draft_deadline.floor, absl::Milliseconds(20));
  EXPECT_EQ(c.pool.draft_deadline.multiple, 6);
  EXPECT_EQ(c.pool.draft_deadline.ceiling, absl::Milliseconds(900));
  EXPECT_EQ(c.pool.draft_deadline.cold_deadline, absl::Milliseconds(300));
  EXPECT_EQ(c.pool.backoff.initial, absl::Milliseconds(100));
  EXPECT_EQ(c.pool.backoff.max, absl::Milliseconds(400));
  EXPECT_EQ(c.target_timeout, absl::Seconds(7));
  EXPECT_EQ(c.failover_wait, absl::ZeroDuration());
  EXPECT_EQ(c.pool.reconnect_grace, absl::Seconds(2));
  EXPECT_EQ(c.pool.draft_deadline.liveness_floor, absl::Milliseconds(500));
  EXPECT_EQ(c.pool.draft_deadline.liveness_multiple, 8);
  EXPECT_EQ(c.max_request_time, absl::Seconds(60));
  EXPECT_EQ(c.pool.probe_interval, absl::Milliseconds(250));
  EXPECT_EQ(c.pool.probe_timeout, absl::Milliseconds(750));
  EXPECT_EQ(c.resolve_interval, absl::Seconds(2));
  EXPECT_EQ(c.worker_client.keepalive_time, absl::Seconds(1));
  EXPECT_EQ(o.server.listen, "0.0.0.0:50051");
  EXPECT_EQ(o.server.metrics_listen, "127.0.0.1:9100");
  EXPECT_EQ(o.server.health_listen, "127.0.0.1:50052");
  EXPECT_EQ(o.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(o.http.threads, 5);
  EXPECT_EQ(o.tls_cert, "c.pem");
  EXPECT_EQ(o.tls_key, "k.pem");
  EXPECT_EQ(o.tls_ca, "ca.pem");
  EXPECT_EQ(o.worker_tls_cert, "wc.pem");
  EXPECT_EQ(o.worker_tls_key, "wk.pem");
  EXPECT_EQ(o.api_keys_file, "keys.txt");
  EXPECT_EQ(o.verbosity, 1);
}

TEST(CoordinatorOptionsTest, ANumberOfDraftTokensUpToTheCap) {
  ASSERT_OK_AND_ASSIGN(CoordinatorProcessOptions o,
                       Parse({"--target", "t:1", "--draft-tokens", "16"}));
  EXPECT_EQ(o.coordinator.default_draft_tokens, SpeculationLimits::kMaxDraftTokens);
  EXPECT_FALSE(o.coordinator.adaptive_draft);
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;  // after --target t:1
  std::string message;            // exactly what tandem-coordinator prints after its name
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class CoordinatorOptionsBadFlagTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(CoordinatorOptionsBadFlagTest, IsInvalidArgumentNamingTheFlag) {
  std::vector<std::string> args = {"--target", "t:1"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  EXPECT_THAT(Parse(args), StatusIs(absl::StatusCode::kInvalidArgument, GetParam().message));
}

constexpr char kDeadlines[] =
    "--draft-backoff-ms, --health-*-ms, --target-timeout-seconds, --request-timeout-seconds, "
    "--resolve-interval-seconds must be > 0 (backoff max >= backoff, keepalive >= 1 s, "
    "failover wait and --reconnect-grace-seconds >= 0)";
constexpr char kHttpLimits[] =
    "--http-max-header-bytes must be >= 256, --http-max-headers, --http-max-connections and "
    "--http-max-connections-per-address >= 1, the --http-*-timeout-seconds > 0, and "
    "--http-max-buffered-body-bytes >= --max-message-bytes";
constexpr char kQueue[] =
    "--max-queued-requests and --max-queue-wait-seconds must be >= 0, --session-idle-seconds > 0";

INSTANTIATE_TEST_SUITE_P(
    Flags, CoordinatorOptionsBadFlagTest,
    ::testing::Values(
        BadCase{"draft_tokens_zero",
                {"--draft-tokens", "0"},
                "--draft-tokens: '0' is not in [1, 16] or 'auto'"},
        BadCase{"draft_tokens_past_the_cap",
                {"--draft-tokens", "17"},
                "--draft-tokens: '17' is not in [1, 16] or 'auto'"},
        BadCase{"draft_tokens_a_word",
                {"--draft-tokens", "many"},
                "--draft-tokens: 'many' is not in [1, 16] or 'auto'"},
        BadCase{
            "no_sessions", {"--max-sessions", "0"}, "--max-sessions and --max-tokens must be >= 1"},
        BadCase{"no_tokens", {"--max-tokens", "0"}, "--max-sessions and --max-tokens must be >= 1"},
        BadCase{"negative_queue", {"--max-queued-requests", "-1"}, kQueue},
        BadCase{"negative_queue_wait", {"--max-queue-wait-seconds", "-1"}, kQueue},
        BadCase{"idle_zero", {"--session-idle-seconds", "0"}, kQueue},
        BadCase{"prompt_bytes_zero",
                {"--max-prompt-bytes", "0"},
                "--max-prompt-bytes must be >= 1 and --max-message-bytes at least as large"},
        BadCase{"message_smaller_than_prompt",
                {"--max-message-bytes", "1000"},
                "--max-prompt-bytes must be >= 1 and --max-message-bytes at least as large"},
        BadCase{"deadline_floor_zero",
                {"--draft-deadline-floor-ms", "0"},
                "draft deadline floor 0 must be > 0 and <= the ceiling 10s"},
        BadCase{"deadline_multiple_below_one",
                {"--draft-deadline-multiple", "0.5"},
                "draft deadline multiple 0.5 must be a finite number >= 1"},
        BadCase{"backoff_zero", {"--draft-backoff-ms", "0"}, kDeadlines},
        BadCase{"backoff_max_below_backoff", {"--draft-backoff-max-ms", "10"}, kDeadlines},
        BadCase{"target_timeout_zero", {"--target-timeout-seconds", "0"}, kDeadlines},
        BadCase{"negative_failover_wait", {"--failover-wait-seconds", "-1"}, kDeadlines},
        BadCase{"negative_reconnect_grace", {"--reconnect-grace-seconds", "-1"}, kDeadlines},
        BadCase{"keepalive_below_a_second", {"--keepalive-seconds", "0.5"}, kDeadlines},
        BadCase{"negative_http_threads", {"--http-threads", "-1"}, "--http-threads must be >= 0"},
        BadCase{"zero_http_headers", {"--http-max-headers", "0"}, kHttpLimits},
        BadCase{"tiny_http_header_bytes", {"--http-max-header-bytes", "100"}, kHttpLimits},
        BadCase{"zero_http_request_timeout", {"--http-request-timeout-seconds", "0"}, kHttpLimits},
        BadCase{"buffered_below_one_message",
                {"--max-message-bytes", "8388608", "--http-max-buffered-body-bytes", "1048576"},
                kHttpLimits},
        BadCase{"unknown_flag", {"--no-such-flag"}, "unknown flag --no-such-flag (see --help)"},
        BadCase{"a_workers_flag", {"--role", "target"}, "unknown flag --role (see --help)"},
        BadCase{"positional", {"extra"}, "unexpected argument 'extra'"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

// --- #30 front ---
TEST(CoordinatorOptionsTest, ServedModelNamesAndCorsOrigins) {
  ASSERT_OK_AND_ASSIGN(CoordinatorProcessOptions o, Parse({"--target", "t:1"}));
  EXPECT_TRUE(o.coordinator.served_model_names.empty());
  EXPECT_FALSE(o.http.cors.enabled());
  ASSERT_OK_AND_ASSIGN(o, Parse({"--target", "t:1", "--served-model-name", "gpt-4o-mini,stories",
                                 "--cors-origins", "http://localhost:3000"}));
  EXPECT_THAT(o.coordinator.served_model_names, ElementsAre("gpt-4o-mini", "stories"));
  EXPECT_TRUE(o.http.cors.Allows("http://localhost:3000"));
  EXPECT_FALSE(o.http.cors.Allows("http://localhost:3001"));
  ASSERT_OK_AND_ASSIGN(o, Parse({"--target", "t:1", "--cors-origins", "*"}));
  EXPECT_TRUE(o.http.cors.Allows("https://any.example"));
  EXPECT_THAT(Parse({"--target", "t:1", "--served-model-name", "a,a"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--served-model-name: 'a' is named twice"));
  EXPECT_THAT(Parse({"--target", "t:1", "--cors-origins", "localhost:3000"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--cors-origins: ")));
}
// --- end ---

TEST(CoordinatorOptionsTest, NoTargetIsInvalidArgument) {
  EXPECT_THAT(Parse({}), StatusIs(absl::StatusCode::kInvalidArgument, "--target is required"));
  EXPECT_THAT(Parse({"--target", ","}),
              StatusIs(absl::StatusCode::kInvalidArgument, "--target is required"));
}

TEST(CoordinatorOptionsTest, AValueOfTheWrongTypeNamesTheFlagAndTheValue) {
  EXPECT_THAT(Parse({"--target", "t:1", "--max-sessions", "lots"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("flag --max-sessions: bad value 'lots'")));
}

}  // namespace
}  // namespace tandem
