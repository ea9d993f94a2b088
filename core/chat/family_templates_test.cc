// The Jinja features the Qwen3, Gemma 3 and Phi-3 chat templates rely on, in templates written
// here in those families' formats: a reverse loop over messages with a namespace (Qwen3 finds
// the last user query), string methods (split, lstrip, rstrip, startswith, endswith) to split
// a reply's <think> reasoning from its answer, `is defined` / `is false` tests of extra context
// (enable_thinking), Gemma's alternation check with raise_exception and its list-of-parts
// content with the system text folded into the first user turn, and Phi-3's closing EOS.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/chat/chat_template.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// Qwen3's format: the reasoning of replies after the last real user query is kept, earlier
// replies keep only their answer; enable_thinking = false opens an empty think block.
constexpr char kQwen3Style[] = R"jinja(
{%- set state = namespace(last_user=-1) %}
{%- for m in messages[::-1] %}
  {%- if state.last_user < 0 and m.role == 'user'
         and not (m.content.startswith('<tool_response>')
                  and m.content.endswith('</tool_response>')) %}
    {%- set state.last_user = messages|length - 1 - loop.index0 %}
  {%- endif %}
{%- endfor %}
{%- for m in messages %}
  {{- '<|im_start|>' + m.role + '\n' }}
  {%- if m.role == 'assistant' and '</think>' in m.content %}
    {%- set answer = m.content.split('</think>')[-1].lstrip('\n') %}
    {%- set thought = m.content.split('</think>')[0].split('<think>')[-1].strip('\n') %}
    {%- if loop.index0 > state.last_user %}
      {{- '<think>\n' + thought + '\n</think>\n\n' }}
    {%- endif %}
    {{- answer.rstrip() }}
  {%- else %}{{- m.content }}{%- endif %}
  {{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}
  {%- if enable_thinking is defined and enable_thinking is false %}
    {{- '<think>\n\n</think>\n\n' }}
  {%- endif %}
{%- endif %})jinja";

// Gemma's format: no system role (its text leads the first user turn), 'model' for the
// assistant, roles that must alternate, content as a string or a list of parts.
constexpr char kGemma3Style[] = R"jinja(
{{- bos_token }}
{%- set prefix = '' %}
{%- set turns = messages %}
{%- if messages and messages[0].role == 'system' %}
  {%- set first = messages[0].content %}
  {%- set prefix = (first if first is string else first[0].text) + '\n\n' %}
  {%- set turns = messages[1:] %}
{%- endif %}
{%- for m in turns %}
  {%- if (m.role == 'user') != (loop.index0 % 2 == 0) %}
    {{- raise_exception('turns must alternate between user and assistant') }}
  {%- endif %}
  {{- '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' }}
  {%- if loop.first %}{{ prefix }}{% endif %}
  {%- if m.content is string %}{{ m.content | trim }}
  {%- else %}
    {%- for part in m.content if part.type == 'text' %}{{ part.text | trim }}{% endfor %}
  {%- endif %}
  {{- '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %})jinja";

// Phi-3's format: <|role|> headers, <|end|> after each turn, EOS after a finished one.
constexpr char kPhi3Style[] = R"jinja(
{%- for m in messages %}{{ '<|' + m.role + '|>\n' + m.content + '<|end|>\n' }}{% endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %})jinja";

json::Value Messages(const std::string& text) {
  absl::StatusOr<json::Value> v = json::Parse(text);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : json::Value();
}

struct RenderCase {
  std::string name;
  const char* source;
  std::string messages;
  bool add_generation_prompt;
  bool thinking_off;  // extra context enable_thinking = false
  std::string expected;
};

TEST(FamilyTemplatesTest, RenderTheFamiliesFormats) {
  const std::vector<RenderCase> cases = {
      {"qwen3 keeps only the answer of an earlier turn and the reasoning of the last", kQwen3Style,
       R"([{"role": "user", "content": "Hi"},
           {"role": "assistant", "content": "<think>\nold\n</think>\n\nHello."},
           {"role": "user", "content": "More?"},
           {"role": "assistant", "content": "<think>\nnew\n</think>\n\nSure."}])",
       false, false,
       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
       "<|im_start|>user\nMore?<|im_end|>\n<|im_start|>assistant\n<think>\nnew\n</think>\n\n"
       "Sure.<|im_end|>\n"},
      {"qwen3 with thinking off opens an empty think block", kQwen3Style,
       R"([{"role": "user", "content": "Hi"}])", true, true,
       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
      {"qwen3 with thinking on leaves the answer open", kQwen3Style,
       R"([{"role": "user", "content": "Hi"}])", true, false,
       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
      {"gemma3 folds the system text into the first user turn and reads text parts", kGemma3Style,
       R"([{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
           {"role": "user", "content": [{"type": "text", "text": " Hi "}]},
           {"role": "assistant", "content": "Hello."},
           {"role": "user", "content": "More?"}])",
       true, false,
       "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello."
       "<end_of_turn>\n<start_of_turn>user\nMore?<end_of_turn>\n<start_of_turn>model\n"},
      {"phi3 ends a finished conversation with EOS", kPhi3Style,
       R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}])", false,
       false, "<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|endoftext|>"},
  };
  ChatTemplateOptions options;
  options.bos_token = "<bos>";
  options.eos_token = "<|endoftext|>";
  for (const RenderCase& c : cases) {
    ASSERT_OK_AND_ASSIGN(ChatTemplate t, ChatTemplate::Create(c.source, options));
    json::Object extra;
    if (c.thinking_off) extra.Set("enable_thinking", json::Value(false));
    ASSERT_OK_AND_ASSIGN(std::string text,
                         t.Render(Messages(c.messages), c.add_generation_prompt, extra));
    EXPECT_EQ(text, c.expected) << c.name;
  }
}

TEST(FamilyTemplatesTest, Gemma3RefusesRolesThatDoNotAlternate) {
  ASSERT_OK_AND_ASSIGN(ChatTemplate t, ChatTemplate::Create(kGemma3Style, {}));
  EXPECT_THAT(t.Render(Messages(R"([{"role": "user", "content": "a"},
                                    {"role": "user", "content": "b"}])"),
                       true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("turns must alternate between user and assistant")));
}

}  // namespace
}  // namespace tandem::chat
