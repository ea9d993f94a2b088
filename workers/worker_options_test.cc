#include "workers/worker_options.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/command_line_test_util.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<WorkerProcessOptions> Parse(std::vector<std::string> args) {
  return testing::FromCommandLine(WorkerOptionsFromFlags, std::move(args));
}

TEST(WorkerOptionsTest, TheDefaults) {
  ASSERT_OK_AND_ASSIGN(WorkerProcessOptions o, Parse({"--role", "target", "--model", "m.gguf"}));
  EXPECT_EQ(o.engine.role, WorkerRole::kTarget);
  EXPECT_EQ(o.engine.model_path, "m.gguf");
  EXPECT_EQ(o.engine.threads, 2);
  EXPECT_EQ(o.engine.kv_type, KvType::kF16);
  EXPECT_EQ(o.engine.context_size, 0);
  EXPECT_EQ(o.engine.max_sessions, 64);
  EXPECT_EQ(o.engine.kv_budget_bytes, 0);
  EXPECT_EQ(o.engine.scheduler.max_batch_tokens, 128);
  EXPECT_EQ(o.engine.pooling, Pooling::kMean);  // #30 embeddings
  EXPECT_EQ(o.engine.model_load.activations, ActivationPrecision::kInt16);  // #31
  EXPECT_EQ(o.server.listen, "127.0.0.1:0");
  EXPECT_EQ(o.server.metrics_listen, "");
  EXPECT_EQ(o.server.health_listen, "");
  EXPECT_EQ(o.server.credentials, nullptr);
  EXPECT_EQ(o.tls.cert, "");
  EXPECT_EQ(o.tls.key, "");
  EXPECT_EQ(o.tls.ca, "");
  EXPECT_EQ(o.tls_client_name, "");
  EXPECT_EQ(o.session_idle, absl::Seconds(600));
  EXPECT_EQ(o.open_timeout, absl::Seconds(10));
  EXPECT_EQ(o.drain, absl::Seconds(10));
  EXPECT_EQ(o.verbosity, 0);
}

TEST(WorkerOptionsTest, EveryFlagReachesItsField) {
  ASSERT_OK_AND_ASSIGN(
      WorkerProcessOptions o,
      Parse({"--role=draft", "--model", "d.gguf", "--listen", "0.0.0.0:7001", "--metrics-listen",
             "127.0.0.1:9101", "--health-listen", "127.0.0.1:7002", "--threads", "3", "--kv", "i8",
             "--ctx", "2048", "--max-sessions", "8", "--kv-budget-mb", "3", "--max-batch-tokens",
             "512", "--drain-seconds", "2.5", "--session-idle-seconds", "0",
             "--open-timeout-seconds", "4", "-v", "2", "--tls-cert", "c.pem", "--tls-key", "k.pem",
             "--tls-ca", "ca.pem", "--tls-client-name", "coordinator", "--pooling", "last",
             "--activations", "int8"}));
  EXPECT_EQ(o.engine.role, WorkerRole::kDraft);
  EXPECT_EQ(o.engine.model_path, "d.gguf");
  EXPECT_EQ(o.server.listen, "0.0.0.0:7001");
  EXPECT_EQ(o.server.metrics_listen, "127.0.0.1:9101");
  EXPECT_EQ(o.server.health_listen, "127.0.0.1:7002");
  EXPECT_EQ(o.engine.threads, 3);
  EXPECT_EQ(o.engine.kv_type, KvType::kI8);
  EXPECT_EQ(o.engine.context_size, 2048);
  EXPECT_EQ(o.engine.max_sessions, 8);
  EXPECT_EQ(o.engine.kv_budget_bytes, int64_t{3} << 20);
  EXPECT_EQ(o.engine.scheduler.max_batch_tokens, 512);
  EXPECT_EQ(o.drain, absl::Seconds(2.5));
  EXPECT_EQ(o.session_idle, absl::ZeroDuration());
  EXPECT_EQ(o.open_timeout, absl::Seconds(4));
  EXPECT_EQ(o.verbosity, 2);
  EXPECT_EQ(o.tls.cert, "c.pem");
  EXPECT_EQ(o.tls.key, "k.pem");
  EXPECT_EQ(o.tls.ca, "ca.pem");
  EXPECT_EQ(o.tls_client_name, "coordinator");
  EXPECT_EQ(o.engine.pooling, Pooling::kLast);  // #30 embeddings
  EXPECT_EQ(o.engine.model_load.activations, ActivationPrecision::kInt8);  // #31
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;
  std::string message;  // exactly what tandem-worker prints after "tandem-worker: "
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class WorkerOptionsBadFlagTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorkerOptionsBadFlagTest, IsInvalidArgumentNamingTheFlag) {
  EXPECT_THAT(Parse(GetParam().args),
              StatusIs(absl::StatusCode::kInvalidArgument, GetParam().message));
}

const std::vector<std::string> kTarget = {"--role", "target", "--model", "m.gguf"};

std::vector<std::string> Target(std::vector<std::string> more) {
  more.insert(more.begin(), kTarget.begin(), kTarget.end());
  return more;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, WorkerOptionsBadFlagTest,
    ::testing::Values(
        BadCase{"no_role", {"--model", "m.gguf"}, "--role must be draft or target, got ''"},
        BadCase{"unknown_role",
                {"--role", "verifier", "--model", "m.gguf"},
                "--role must be draft or target, got 'verifier'"},
        BadCase{"no_model", {"--role", "draft"}, "--model is required"},
        BadCase{"batch_of_zero",
                Target({"--max-batch-tokens", "0"}),
                "--max-batch-tokens must be in [1, 512]"},
        BadCase{"batch_past_a_chunk",
                Target({"--max-batch-tokens", "513"}),
                "--max-batch-tokens must be in [1, 512]"},
        BadCase{"unknown_kv",
                Target({"--kv", "q4"}),
                "--kv: KV cache type 'q4' is not one of f32, f16, i8"},
        BadCase{"unknown_activations",  // #31
                Target({"--activations", "int4"}),
                "--activations: activation precision 'int4' is not one of int16, int8"},
        BadCase{"unknown_pooling",  // #30 embeddings
                Target({"--pooling", "cls"}),
                "--pooling: pooling \"cls\" is not one of \"mean\", \"last\""},
        BadCase{"no_threads",
                Target({"--threads", "0"}),
                "--threads and --max-sessions must be >= 1, --ctx and --kv-budget-mb >= 0"},
        BadCase{"no_sessions",
                Target({"--max-sessions", "0"}),
                "--threads and --max-sessions must be >= 1, --ctx and --kv-budget-mb >= 0"},
        BadCase{"negative_ctx",
                Target({"--ctx", "-1"}),
                "--threads and --max-sessions must be >= 1, --ctx and --kv-budget-mb >= 0"},
        BadCase{"negative_idle",
                Target({"--session-idle-seconds", "-1"}),
                "--session-idle-seconds and --open-timeout-seconds must be >= 0"},
        BadCase{"negative_open",
                Target({"--open-timeout-seconds", "-0.5"}),
                "--session-idle-seconds and --open-timeout-seconds must be >= 0"},
        BadCase{"unknown_flag", Target({"--no-such-flag"}), "unknown flag --no-such-flag (see --help)"},
        BadCase{"another_binarys_flag", Target({"--draft-tokens", "4"}),
                "unknown flag --draft-tokens (see --help)"},
        BadCase{"missing_value", Target({"--threads"}), "flag --threads needs a value"},
        BadCase{"positional", Target({"extra"}), "unexpected argument 'extra'"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(WorkerOptionsTest, AValueOfTheWrongTypeNamesTheFlagAndTheValue) {
  EXPECT_THAT(Parse(Target({"--threads", "many"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("flag --threads: bad value 'many'")));
}

}  // namespace
}  // namespace tandem
