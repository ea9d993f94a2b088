#include "client/chat/chat_options.h"

#include <fstream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/command_line_test_util.h"
#include "core/base/status_matchers.h"
#include "core/generation/sampling_defaults.h"
#include "core/generation/speculation_defaults.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<ChatProcessOptions> Parse(std::vector<std::string> args) {
  return testing::FromCommandLine(ChatOptionsFromFlags, std::move(args));
}

TEST(ChatOptionsTest, ASeedGivenIsUsedZeroIncluded) {
  for (const char* seed : {"0", "7", "18446744073709551615"}) {
    ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({"model.gguf", "--seed", seed}));
    EXPECT_EQ(o.chat.sampler.seed, std::stoull(seed));
  }
}

TEST(ChatOptionsTest, TheDefaultsInProcess) {
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({"model.gguf"}));
  const ChatOptions& c = o.chat;
  EXPECT_EQ(c.model_path, "model.gguf");
  EXPECT_EQ(c.draft_path, "");
  EXPECT_EQ(c.format, "");
  EXPECT_EQ(c.system, "");
  EXPECT_EQ(c.sampler.temperature, SamplingDefaults::kTemperature);
  EXPECT_EQ(c.sampler.top_k, SamplingDefaults::kTopK);
  EXPECT_EQ(c.sampler.top_p, SamplingDefaults::kTopP);
  EXPECT_EQ(c.sampler.min_p, SamplingDefaults::kMinP);
  EXPECT_EQ(c.sampler.repetition_penalty, SamplingDefaults::kRepetitionPenalty);
  EXPECT_EQ(c.sampler.penalty_window, SamplingDefaults::kPenaltyWindow);
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions again, Parse({"model.gguf"}));
  EXPECT_NE(c.sampler.seed, again.chat.sampler.seed);  // unset: a fresh seed each run
  EXPECT_EQ(c.sampler.coupling, Coupling::kStandard);
  EXPECT_EQ(c.context_size, 4096);
  EXPECT_EQ(c.kv_type, KvType::kF16);
  EXPECT_EQ(c.model_load.activations, ActivationPrecision::kInt16);  // #31
  EXPECT_EQ(c.max_tokens, SpeculationDefaults::kChatMaxTokens);
  EXPECT_FALSE(c.ignore_eos);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.draft_tokens, SpeculationDefaults::kDraftTokens);
  EXPECT_FALSE(c.adaptive_draft);
  EXPECT_FALSE(c.pipelined);
  EXPECT_EQ(o.server, "");
  EXPECT_EQ(o.prompt, "");
  EXPECT_EQ(o.timeout, absl::Seconds(600));
  EXPECT_FALSE(o.tls);
  EXPECT_EQ(o.tls_files.cert, "");
  EXPECT_EQ(o.tls_files.key, "");
  EXPECT_EQ(o.tls_files.ca, "");
  EXPECT_EQ(o.api_key_file, "");
}

TEST(ChatOptionsTest, EveryInProcessFlagReachesItsField) {
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({"-p",
                                                    "Hello",
                                                    "--system",
                                                    "Be brief.",
                                                    "--format",
                                                    "chatml",
                                                    "--temp",
                                                    "0",
                                                    "--top-k",
                                                    "5",
                                                    "--top-p",
                                                    "0.5",
                                                    "--min-p",
                                                    "0.1",
                                                    "--repeat-penalty",
                                                    "1.1",
                                                    "--repeat-last-n",
                                                    "32",
                                                    "--seed",
                                                    "7",
                                                    "--ctx",
                                                    "256",
                                                    "--kv",
                                                    "f32",
                                                    "--activations",
                                                    "int8",
                                                    "--max-tokens",
                                                    "9",
                                                    "--ignore-eos",
                                                    "--threads",
                                                    "1",
                                                    "--draft",
                                                    "d.gguf",
                                                    "--draft-tokens",
                                                    "auto",
                                                    "--coupling",
                                                    "gumbel",
                                                    "--pipeline",
                                                    "t.gguf"}));
  const ChatOptions& c = o.chat;
  EXPECT_EQ(c.model_path, "t.gguf");
  EXPECT_EQ(o.prompt, "Hello");
  EXPECT_EQ(c.system, "Be brief.");
  EXPECT_EQ(c.format, "chatml");
  EXPECT_EQ(c.sampler.temperature, 0.0f);
  EXPECT_EQ(c.sampler.top_k, 5);
  EXPECT_EQ(c.sampler.top_p, 0.5f);
  EXPECT_EQ(c.sampler.min_p, 0.1f);
  EXPECT_EQ(c.sampler.repetition_penalty, 1.1f);
  EXPECT_EQ(c.sampler.penalty_window, 32);
  EXPECT_EQ(c.sampler.seed, 7u);
  EXPECT_EQ(c.context_size, 256);
  EXPECT_EQ(c.kv_type, KvType::kF32);
  EXPECT_EQ(c.model_load.activations, ActivationPrecision::kInt8);  // #31
  EXPECT_EQ(c.max_tokens, 9);
  EXPECT_TRUE(c.ignore_eos);
  EXPECT_EQ(c.threads, 1);
  EXPECT_EQ(c.draft_path, "d.gguf");
  EXPECT_TRUE(c.adaptive_draft);
  EXPECT_EQ(c.sampler.coupling, Coupling::kGumbel);
  EXPECT_TRUE(c.pipelined);
}

TEST(ChatOptionsTest, EveryServerFlagReachesItsField) {
  ASSERT_OK_AND_ASSIGN(
      ChatProcessOptions o,
      Parse({"--server", "127.0.0.1:50051", "--timeout", "2.5", "--tls", "--tls-ca", "ca.pem",
             "--tls-cert", "c.pem", "--tls-key", "k.pem", "--api-key-file", "key.txt",
             "--draft-tokens", "6", "--max-tokens", "3"}));
  EXPECT_EQ(o.server, "127.0.0.1:50051");
  EXPECT_EQ(o.chat.model_path, "");
  EXPECT_EQ(o.timeout, absl::Seconds(2.5));
  EXPECT_TRUE(o.tls);
  EXPECT_EQ(o.tls_files.ca, "ca.pem");
  EXPECT_EQ(o.tls_files.cert, "c.pem");
  EXPECT_EQ(o.tls_files.key, "k.pem");
  EXPECT_EQ(o.api_key_file, "key.txt");
  EXPECT_EQ(o.chat.draft_tokens, 6);
  EXPECT_EQ(o.chat.max_tokens, 3);
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;
  std::string message;  // exactly what tandem-chat prints after "tandem-chat: "
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ChatOptionsBadFlagTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ChatOptionsBadFlagTest, IsInvalidArgumentNamingTheFlag) {
  EXPECT_THAT(Parse(GetParam().args),
              StatusIs(absl::StatusCode::kInvalidArgument, GetParam().message));
}

constexpr char kServerRefuses[] =
    " cannot apply with --server: the coordinator's workers choose their context, KV cache, "
    "activations and threads, and the coordinator its draft";

INSTANTIATE_TEST_SUITE_P(
    Flags, ChatOptionsBadFlagTest,
    ::testing::Values(
        BadCase{"no_model", {"-p", "x"}, "expected one MODEL argument or --server (see --help)"},
        BadCase{"two_models",
                {"a.gguf", "b.gguf"},
                "expected one MODEL argument or --server (see --help)"},
        BadCase{"model_and_server",
                {"m.gguf", "--server", "h:1"},
                "give either MODEL or --server, not both"},
        // Refused even at their default values.
        BadCase{"server_with_kv",
                {"--server", "h:1", "--kv", "f16"},
                std::string("--kv") + kServerRefuses},
        BadCase{"server_with_local_flags",
                {"--server", "h:1", "--ctx", "256", "--threads", "2", "--ctx", "128", "--draft",
                 "d.gguf"},
                std::string("--ctx, --threads, --draft") + kServerRefuses},
        BadCase{"server_with_activations",  // #31
                {"--server", "h:1", "--activations", "int8"},
                std::string("--activations") + kServerRefuses},
        BadCase{"unknown_activations",  // #31
                {"m.gguf", "--activations", "int4"},
                "--activations: activation precision 'int4' is not one of int16, int8"},
        BadCase{"timeout_in_process",
                {"m.gguf", "--timeout", "5"},
                "--timeout only applies with --server"},
        BadCase{"tls_in_process",
                {"m.gguf", "--tls", "--api-key-file", "k"},
                "--tls, --api-key-file only applies with --server"},
        BadCase{
            "timeout_zero", {"--server", "h:1", "--timeout", "0"}, "--timeout must be > 0 seconds"},
        BadCase{"unknown_coupling",
                {"m.gguf", "--coupling", "maximal"},
                "--coupling: 'maximal' is not 'standard' or 'gumbel'"},
        BadCase{"ctx_zero", {"m.gguf", "--ctx", "0"}, "--ctx must be >= 1"},
        BadCase{"max_tokens_zero", {"m.gguf", "--max-tokens", "0"}, "--max-tokens must be >= 1"},
        BadCase{"threads_zero", {"m.gguf", "--threads", "0"}, "--threads must be >= 1"},
        BadCase{"unknown_kv",
                {"m.gguf", "--kv", "q4"},
                "--kv: KV cache type 'q4' is not one of f32, f16, i8"},
        BadCase{"draft_tokens_a_word",
                {"m.gguf", "--draft-tokens", "zero"},
                "--draft-tokens: 'zero' is not a count >= 1 or 'auto'"},
        BadCase{"draft_tokens_zero",
                {"m.gguf", "--draft-tokens", "0"},
                "--draft-tokens: '0' is not a count >= 1 or 'auto'"},
        BadCase{"logit_bias_without_equals",
                {"m.gguf", "--logit-bias", "5"},
                "--logit-bias: '5' is not ID=BIAS"},
        BadCase{"logit_bias_negative_id",
                {"m.gguf", "--logit-bias", "-5=1"},
                "--logit-bias: '-5=1' is not ID=BIAS"},
        BadCase{"logit_bias_twice",
                {"m.gguf", "--logit-bias", "7=1,3=2,7=-1"},
                "--logit-bias: token 7 is given twice"},
        BadCase{"unknown_flag",
                {"m.gguf", "--no-such-flag"},
                "unknown flag --no-such-flag (see --help)"},
        BadCase{"a_coordinators_flag",
                {"m.gguf", "--target", "t:1"},
                "unknown flag --target (see --help)"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

// A file under the test's temporary folder holding `text`; its path.
std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ChatOptionsTest, LogitBiasAndOpenAiPenaltiesReachTheSampler) {
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o,
                       Parse({"m.gguf", "--logit-bias", "9=-100,2=1.5", "--presence-penalty", "0.5",
                              "--frequency-penalty", "-1"}));
  EXPECT_EQ(o.chat.sampler.logit_bias, (std::vector<LogitBias>{{2, 1.5f}, {9, -100}}));
  EXPECT_EQ(o.chat.sampler.presence_penalty, 0.5f);
  EXPECT_EQ(o.chat.sampler.frequency_penalty, -1);
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions plain, Parse({"m.gguf"}));
  EXPECT_TRUE(plain.chat.sampler.logit_bias.empty());
  EXPECT_EQ(plain.chat.sampler.presence_penalty, 0);
  EXPECT_EQ(plain.chat.sampler.frequency_penalty, 0);
}

TEST(ChatOptionsTest, NoConstraintByDefault) {
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({"model.gguf"}));
  EXPECT_TRUE(o.chat.constraint.empty());
}

TEST(ChatOptionsTest, JsonSchemaFileIsReadWhole) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  const std::string path = TempFile("schema.json", schema + "\n");
  for (const char* where : {"model.gguf", "--server=h:1"}) {
    ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({where, "--json-schema", path}));
    EXPECT_EQ(o.chat.constraint.kind, ConstraintSpec::Kind::kJsonSchema);
    EXPECT_EQ(o.chat.constraint.text, schema + "\n");
  }
}

TEST(ChatOptionsTest, GrammarFileIsReadWhole) {
  const std::string grammar = "root ::= \"yes\" | \"no\"\n";
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o,
                       Parse({"--server", "h:1", "--grammar", TempFile("g.gbnf", grammar)}));
  EXPECT_EQ(o.chat.constraint.kind, ConstraintSpec::Kind::kGrammar);
  EXPECT_EQ(o.chat.constraint.text, grammar);
}

TEST(ChatOptionsTest, RegexIsTheFlagsValue) {
  ASSERT_OK_AND_ASSIGN(ChatProcessOptions o, Parse({"m.gguf", "--regex", "[0-9]+ (cats|dogs)"}));
  EXPECT_EQ(o.chat.constraint,
            (ConstraintSpec{ConstraintSpec::Kind::kRegex, "[0-9]+ (cats|dogs)"}));
}

TEST(ChatOptionsTest, ABadConstraintFileIsNamed) {
  const std::string missing = ::testing::TempDir() + "/no-such-schema.json";
  const std::string empty = TempFile("empty.gbnf", "");
  const std::string not_json = TempFile("not.json", "{\"type\": ");
  const std::string huge = TempFile("huge.gbnf", std::string((1 << 20) + 1, 'a'));
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"m.gguf", "--json-schema", missing},
       "cannot open --json-schema file '" + missing + "': No such file or directory"},
      {{"m.gguf", "--grammar", empty}, "--grammar file '" + empty + "' is empty"},
      {{"m.gguf", "--json-schema", not_json},
       "--json-schema file '" + not_json + "' is not JSON: "},
      {{"m.gguf", "--grammar", huge}, "--grammar file '" + huge + "' is larger than 1048576 bytes"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(Parse(c.args), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.args[2];
  }
}

TEST(ChatOptionsTest, AtMostOneConstraint) {
  const std::string schema = TempFile("one.json", "{}");
  const std::string grammar = TempFile("one.gbnf", "root ::= \"a\"");
  EXPECT_THAT(Parse({"m.gguf", "--json-schema", schema, "--regex", "a"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--json-schema, --regex: give at most one constraint"));
  EXPECT_THAT(
      Parse({"--server", "h:1", "--json-schema", schema, "--grammar", grammar, "--regex", "a"}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "--json-schema, --grammar, --regex: give at most one constraint"));
}

TEST(ChatOptionsTest, AValueOfTheWrongTypeNamesTheFlagAndTheValue) {
  EXPECT_THAT(
      Parse({"m.gguf", "--top-p", "most"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("flag --top-p: bad value 'most'")));
}

}  // namespace
}  // namespace tandem
