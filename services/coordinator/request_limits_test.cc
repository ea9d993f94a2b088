#include "services/coordinator/request_limits.h"

#include <functional>
#include <string>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

RequestLimits Limits() {
  RequestLimits limits;
  limits.max_prompt_bytes = 1000;
  limits.max_prompt_tokens = 512;
  return limits;
}

v1::GenerateRequest Text(size_t bytes) {
  v1::GenerateRequest r;
  r.set_text(std::string(bytes, 'a'));
  return r;
}

v1::GenerateRequest Chat(int messages, size_t bytes_each) {
  v1::GenerateRequest r;
  for (int i = 0; i < messages; ++i) {
    v1::ChatMessage* m = r.mutable_chat()->add_messages();
    m->set_role("user");
    m->set_content(std::string(bytes_each, 'b'));
  }
  return r;
}

struct LimitCase {
  std::string name;
  std::function<v1::GenerateRequest()> request;
  absl::StatusCode code;
  std::string message;  // must name the field and the limit
};

class GenerateLimitsTest : public ::testing::TestWithParam<LimitCase> {};

TEST_P(GenerateLimitsTest, GivesTheExactCodeNamingTheFieldAndTheLimit) {
  const LimitCase& c = GetParam();
  const absl::Status status = CheckGenerateLimits(c.request(), Limits());
  if (c.code == absl::StatusCode::kOk) {
    EXPECT_OK(status);
  } else {
    EXPECT_THAT(status, StatusIs(c.code, HasSubstr(c.message)));
    EXPECT_LT(status.message().size(), 200u) << "the message must not echo the value";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Limits, GenerateLimitsTest,
    ::testing::Values(
        LimitCase{"TextAtTheLimit", [] { return Text(1000); }, absl::StatusCode::kOk, ""},
        LimitCase{"TextOverTheLimit", [] { return Text(1001); }, absl::StatusCode::kInvalidArgument,
                  "text is 1001 bytes; the limit is 1000"},
        LimitCase{"TenMegabyteText", [] { return Text(10 << 20); },
                  absl::StatusCode::kInvalidArgument, "text is 10485760 bytes"},
        LimitCase{"ChatBytesTogether", [] { return Chat(3, 330); },
                  absl::StatusCode::kInvalidArgument,
                  "chat.messages (role, content, name and tool calls) and template_kwargs_json "
                  "together is 1002 bytes; the limit is 1000"},
        LimitCase{"ToolCallArgumentsCountAsPromptBytes",
                  [] {
                    v1::GenerateRequest r = Chat(1, 500);
                    v1::ToolCall* call = r.mutable_chat()->mutable_messages(0)->add_tool_calls();
                    call->set_name("f");
                    call->set_arguments(std::string(496, 'x'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "(role, content, name and tool calls) and template_kwargs_json together is "
                  "1001 bytes"},
        LimitCase{"TemplateKwargsCountAsPromptBytes",
                  [] {
                    v1::GenerateRequest r = Chat(1, 500);
                    r.mutable_chat()->set_template_kwargs_json(
                        "{\"x\": \"" + std::string(488, 'x') + "\"}");
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "and template_kwargs_json together is 1001 bytes"},
        LimitCase{"TooManyTools",
                  [] {
                    v1::GenerateRequest r = Chat(1, 5);
                    for (int i = 0; i < 129; ++i) r.mutable_chat()->add_tools()->set_name("t");
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument, "chat.tools is 129 tools; the limit is 128"},
        LimitCase{"ToolSchemasBoundedAsAConstraint",
                  [] {
                    v1::GenerateRequest r = Chat(1, 5);
                    v1::Tool* tool = r.mutable_chat()->add_tools();
                    tool->set_name("t");
                    tool->set_parameters_json(std::string(1 << 20, ' '));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "chat.tools (names, descriptions and parameters together) is 1048577 bytes; "
                  "the limit is 1048576"},
        LimitCase{"ChatAtTheLimit", [] { return Chat(4, 246); }, absl::StatusCode::kOk, ""},
        LimitCase{"TooManyChatMessages", [] { return Chat(1025, 0); },
                  absl::StatusCode::kInvalidArgument,
                  "chat.messages is 1025 messages; the limit is 1024"},
        LimitCase{"LongFormatName",
                  [] {
                    v1::GenerateRequest r = Chat(1, 5);
                    r.mutable_chat()->set_format(std::string(65, 'f'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument, "chat.format is 65 bytes; the limit is 64"},
        LimitCase{"TokenIdsBeyondTheContext",
                  [] {
                    v1::GenerateRequest r;
                    for (int i = 0; i < 513; ++i) r.mutable_token_ids()->add_ids(5);
                    return r;
                  },
                  absl::StatusCode::kOutOfRange,
                  "prompt of 513 token ids exceeds the context of 512"},
        LimitCase{"MegabyteSessionId",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.set_session_id(std::string(1 << 20, 's'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "session_id is 1048576 bytes; the limit is 128"},
        LimitCase{"EightKilobyteSessionId",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.set_session_id(std::string(8192, 's'));
                    r.set_require_existing_session(true);
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument, "session_id is 8192 bytes"},
        LimitCase{"SessionIdAtTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.set_session_id(std::string(128, 's'));
                    return r;
                  },
                  absl::StatusCode::kOk, ""},
        LimitCase{"TooManyStopStrings",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    for (int i = 0; i < 17; ++i) r.add_stop_strings("x");
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "stop_strings is 17 strings; the limit is 16"},
        LimitCase{"LongStopString",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.add_stop_strings("ok");
                    r.add_stop_strings(std::string(257, 'x'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "stop_strings[1] is 257 bytes; the limit is 256"},
        LimitCase{"EmptyStopString",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.add_stop_strings("");
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument, "stop_strings[0] is empty"},
        LimitCase{"TooManyStopTokenIds",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    for (int i = 0; i < 257; ++i) r.add_stop_token_ids(i);
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "stop_token_ids is 257 ids; the limit is 256"},
        LimitCase{"SchemaAtTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.mutable_constraint()->mutable_json_schema()->set_schema(
                        std::string(1 << 20, ' '));
                    return r;
                  },
                  absl::StatusCode::kOk, ""},
        LimitCase{"SchemaOverTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.mutable_constraint()->mutable_json_schema()->set_schema(
                        std::string((1 << 20) + 1, ' '));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "constraint.json_schema.schema is 1048577 bytes; the limit is 1048576"},
        LimitCase{"GrammarOverTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.mutable_constraint()->set_grammar(std::string(2 << 20, 'g'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "constraint.grammar is 2097152 bytes; the limit is 1048576"},
        LimitCase{"RegexOverTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.mutable_constraint()->set_regex(std::string((1 << 20) + 7, 'r'));
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "constraint.regex is 1048583 bytes; the limit is 1048576"},
        LimitCase{"JsonObjectHasNoText",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    r.mutable_constraint()->mutable_json_object();
                    return r;
                  },
                  absl::StatusCode::kOk, ""},
        LimitCase{"LogitBiasAtTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    for (int id = 0; id < 1024; ++id)
                      (*r.mutable_sampling()->mutable_logit_bias())[id] = 1;
                    return r;
                  },
                  absl::StatusCode::kOk, ""},
        LimitCase{"LogitBiasOverTheLimit",
                  [] {
                    v1::GenerateRequest r = Text(5);
                    for (int id = 0; id < 1025; ++id)
                      (*r.mutable_sampling()->mutable_logit_bias())[id] = 1;
                    return r;
                  },
                  absl::StatusCode::kInvalidArgument,
                  "sampling.logit_bias is 1025 entries; the limit is 1024"}),
    [](const ::testing::TestParamInfo<LimitCase>& info) { return info.param.name; });

TEST(TokenizeLimitsTest, TextAndChatsAreBoundedLikeGeneratePrompts) {
  v1::TokenizeRequest text;
  text.set_text(std::string(1001, 'a'));
  EXPECT_THAT(CheckTokenizeLimits(text, Limits()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("text is 1001 bytes")));
  v1::TokenizeRequest chat;
  *chat.mutable_chat() = Chat(2, 600).chat();
  EXPECT_THAT(CheckTokenizeLimits(chat, Limits()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1208 bytes")));
  text.set_text("fine");
  EXPECT_OK(CheckTokenizeLimits(text, Limits()));
}

TEST(SessionIdLimitTest, LongIdsAreInvalidArgument) {
  EXPECT_OK(CheckSessionIdLimit(std::string(128, 'x'), Limits()));
  EXPECT_THAT(CheckSessionIdLimit(std::string(129, 'x'), Limits()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("session_id is 129 bytes; the limit is 128")));
}

}  // namespace
}  // namespace tandem
