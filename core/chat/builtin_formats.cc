#include "core/chat/builtin_formats.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::chat {
namespace {

// Shared by every format: the text of a message's content (string or text parts).
constexpr char kTextMacro[] = R"jinja(
{%- macro text(content) %}
{%- if content is string %}{{ content }}
{%- elif content is not none %}
{%- for part in content if part.type == 'text' %}{{ part.text }}{% endfor %}
{%- endif %}
{%- endmacro %}
)jinja";

// System text that formats without a system role put before the first user turn.
constexpr char kSystemPrefix[] = R"jinja(
{%- set ns = namespace(system='') %}
{%- for message in messages if message.role == 'system' %}
{%- set ns.system = ns.system + text(message.content) %}
{%- endfor %}
)jinja";

constexpr char kChatml[] = R"jinja(
{%- for message in messages %}
{{- '<|im_start|>' + message.role + '\n' + text(message.content) + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
)jinja";

constexpr char kLlama2[] = R"jinja(
{%- for message in messages if message.role != 'system' %}
{%- if message.role == 'user' %}
{%- set content = text(message.content) | trim %}
{%- if loop.first and ns.system %}
{%- set content = '<<SYS>>\n' + ns.system | trim + '\n<</SYS>>\n\n' + content %}
{%- endif %}
{{- bos_token + '[INST] ' + content + ' [/INST]' }}
{%- elif message.role == 'assistant' %}
{{- ' ' + text(message.content) | trim + ' ' + eos_token }}
{%- endif %}
{%- endfor %}
)jinja";

constexpr char kLlama3[] = R"jinja(
{{- bos_token }}
{%- for message in messages %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' }}
{{- text(message.content) | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}
)jinja";

constexpr char kMistral[] = R"jinja(
{{- bos_token }}
{%- for message in messages if message.role != 'system' %}
{%- if message.role == 'user' %}
{%- set content = text(message.content) %}
{%- if loop.first and ns.system %}{% set content = ns.system + '\n\n' + content %}{% endif %}
{{- '[INST] ' + content + ' [/INST]' }}
{%- elif message.role == 'assistant' %}
{{- text(message.content) + eos_token }}
{%- endif %}
{%- endfor %}
)jinja";

constexpr char kPhi3[] = R"jinja(
{%- for message in messages %}
{{- '<|' + message.role + '|>\n' + text(message.content) + '<|end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}
)jinja";

constexpr char kGemma[] = R"jinja(
{{- bos_token }}
{%- for message in messages if message.role != 'system' %}
{%- set role = 'model' if message.role == 'assistant' else message.role %}
{%- set content = text(message.content) | trim %}
{%- if loop.first and ns.system %}{% set content = ns.system | trim + '\n\n' + content %}{% endif %}
{{- '<start_of_turn>' + role + '\n' + content + '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}
)jinja";

constexpr char kZephyr[] = R"jinja(
{%- for message in messages %}
{{- '<|' + message.role + '|>\n' + text(message.content) + eos_token + '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}
)jinja";

constexpr char kRaw[] = R"jinja(
{%- for message in messages %}{{ text(message.content) }}{% endfor %}
)jinja";

struct Format {
  const char* name;
  const char* body;
  bool needs_system_prefix;
};

constexpr Format kFormats[] = {
    {"chatml", kChatml, false}, {"gemma", kGemma, true},     {"llama2", kLlama2, true},
    {"llama3", kLlama3, false}, {"mistral", kMistral, true}, {"phi3", kPhi3, false},
    {"raw", kRaw, false},       {"zephyr", kZephyr, false},
};

}  // namespace

std::vector<std::string> BuiltinFormatNames() {
  std::vector<std::string> names;
  for (const Format& f : kFormats) names.push_back(f.name);
  return names;
}

absl::StatusOr<std::string> BuiltinFormatSource(absl::string_view name) {
  for (const Format& f : kFormats) {
    if (name == f.name) {
      return absl::StrCat(kTextMacro, f.needs_system_prefix ? kSystemPrefix : "", f.body);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown chat format '", name, "'; known: ", absl::StrJoin(BuiltinFormatNames(), ", ")));
}

absl::StatusOr<ChatTemplate> BuiltinFormat(absl::string_view name, ChatTemplateOptions options) {
  absl::StatusOr<std::string> source = BuiltinFormatSource(name);
  if (!source.ok()) return source.status();
  options.trim_blocks = true;
  options.lstrip_blocks = true;
  return ChatTemplate::Create(*source, std::move(options));
}

}  // namespace tandem::chat
