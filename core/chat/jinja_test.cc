#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/chat/jinja_interpreter.h"
#include "core/chat/jinja_value.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::chat::jinja {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// The variables every case sees.
constexpr char kContext[] = R"json({
  "s": "  Hello World  ", "n": 7, "f": 2.5, "l": [3, 1, 2],
  "d": {"b": 1, "a": [true, null], "c": "x"},
  "msgs": [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": "yo", "tool_calls": [1]},
           {"role": "user", "content": "bye"}],
  "u": "\u00fcn\u00ef\u2713", "t": null})json";

absl::StatusOr<std::string> Render(const std::string& source, bool trim = true,
                                   const RenderOptions& limits = {}) {
  ParserOptions options;
  options.lexer.trim_blocks = trim;
  options.lexer.lstrip_blocks = trim;
  absl::StatusOr<Template> t = Template::Parse(source, options);
  if (!t.ok()) return t.status();
  absl::StatusOr<json::Value> context = json::Parse(kContext);
  if (!context.ok()) return context.status();
  std::vector<std::pair<std::string, Value>> globals;
  for (const auto& [key, value] : context->as_object()) globals.emplace_back(key, FromJson(value));
  return t->Render(globals, limits);
}

struct Case {
  std::string source;
  std::string expected;  // what Jinja 3.1 (trim_blocks, lstrip_blocks) renders
};

void ExpectRenders(const std::vector<Case>& cases, bool trim = true) {
  for (const Case& c : cases) {
    EXPECT_THAT(Render(c.source, trim), IsOkAndHolds(c.expected)) << c.source;
  }
}

TEST(JinjaTest, EvaluatesExpressionsWithPythonSemantics) {
  ExpectRenders({
      {"{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ 2 "
       "** 10 }}",
       "7|9|3|-4|2|3.5|1024"},
      {"{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] + [2] }}|{{ n > 5 and n < 10 }}|{{ 1 < n "
       "< 5 }}",
       "a1NoneTrue|ababab|[1, 2]|True|False"},
      {"{{ 'x' if n else 'y' }}|{{ 'x' if t else 'y' }}|{{ 'x' if t }}|{{ not n }}|{{ t or 'dflt' "
       "}}|{{ n and 'yes' }}",
       "x|y||False|dflt|yes"},
      {"{{ 'b' in d }}|{{ 'q' not in d }}|{{ 2 in l }}|{{ 'ell' in s }}|{{ 'x' in undefined_var }}",
       "True|True|True|True|False"},
      {"{{ l[0] }}|{{ l[-1] }}|{{ l[1:] }}|{{ l[::-1] }}|{{ l[:-1] }}|{{ s[2:7] }}|{{ u[::-1] "
       "}}|{{ u[1] }}|{{ l[5] }}|",
       "3|2|[1, 2]|[2, 1, 3]|[3, 1]|Hello|✓ïnü|n||"},
      {"{{ d.b }}|{{ d['c'] }}|{{ d.missing }}|{{ msgs[1].tool_calls }}|{{ msgs[0].tool_calls is "
       "defined }}",
       "1|x||[1]|False"},
      {"{{ [1, 'a', none, true, 2.0] }}|{{ {'k': 'v', 'n': [1]} }}|{{ (1, 2) | list }}|{{ none "
       "}}|{{ f }}|{{ 1e20 }}|{{ 0.1 + 0.2 }}",
       "[1, 'a', None, True, 2.0]|{'k': 'v', 'n': [1]}|[1, 2]|None|2.5|1e+20|0.30000000000000004"},
      {"{{ \"it's\" }}|{{ ['it\\'s', \"q\\\"\"] }}|{{ 'tab\\there' }}|{{ '\\u00e9\\x41' }}",
       "it's|[\"it's\", 'q\"']|tab\there|éA"},
      {"{{ d.items() | list }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.get('c') }}|{{ "
       "d.get('zz', 5) }}|{{ d.get('zz') }}",
       "[('b', 1), ('a', [True, None]), ('c', 'x')]|['b', 'a', 'c']|[1, [True, None], "
       "'x']|x|5|None"},
      {"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ "
       "'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}",
       "Hello World|Hello World  |  Hello World|a|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']"},
      {"{{ 'Hello'.startswith('He') }}|{{ 'Hello'.endswith(('x', 'lo')) }}|{{ 'aXa'.replace('a', "
       "'b') }}|{{ 'abc'.upper() }}|{{ 'ABC'.lower() }}|{{ 'hello world'.title() }}|{{ "
       "'hELLO'.capitalize() }}|{{ '{} and {}'.format(1, 'b') }}|{{ '-'.join(['a', 'b']) }}",
       "True|True|bXb|ABC|abc|Hello World|Hello|1 and b|a-b"},
  });
}

TEST(JinjaTest, AppliesFilters) {
  ExpectRenders({
      {"{{ s | trim }}|{{ 'xxhixx' | trim('x') }}|{{ l | length }}|{{ d | count }}|{{ u | length "
       "}}|{{ undefined_var | length }}",
       "Hello World|hi|3|3|4|0"},
      {"{{ 'abc' | upper }}|{{ 'ABC' | lower }}|{{ 'hello big world' | title }}|{{ 'hELLO wORLD' | "
       "capitalize }}",
       "ABC|abc|Hello Big World|Hello world"},
      {"{{ undefined_var | default('dflt') }}|{{ '' | default('dflt') }}|{{ '' | default('dflt', "
       "true) }}|{{ t | d('x', true) }}|{{ n | d(1) }}",
       "dflt||dflt|x|7"},
      {"{{ d | items | list }}|{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}",
       "[('b', 1), ('a', [True, None]), ('c', 'x')]|b=1;a=[True, None];c=x;"},
      {"{{ l | join(', ') }}|{{ msgs | join('/', attribute='role') }}|{{ l | first }}|{{ l | last "
       "}}|{{ 'abc' | first }}",
       "3, 1, 2|user/assistant/user|3|2|a"},
      {"{{ 'a-b-c' | replace('-', '+') }}|{{ 'a-b-c' | replace('-', '+', 1) }}|{{ l | string }}|{{ "
       "42 | string }}|{{ '42' | int + 1 }}|{{ '3.7' | int }}|{{ 'x' | int(-1) }}|{{ 2.9 | int "
       "}}|{{ '2.5' | float }}",
       "a+b+c|a+b-c|[3, 1, 2]|42|43|3|-1|2|2.5"},
      {"{{ 'abc' | list }}|{{ msgs | selectattr('role', 'equalto', 'user') | "
       "map(attribute='content') | list }}|{{ msgs | rejectattr('role', 'eq', 'user') | list | "
       "length }}",
       "['a', 'b', 'c']|['hi', 'bye']|1"},
      {"{{ msgs | selectattr('tool_calls', 'defined') | list | length }}|{{ msgs | "
       "selectattr('tool_calls') | list | length }}|{{ l | select('odd') | list }}|{{ l | "
       "reject('odd') | list }}|{{ ['a', 'b'] | map('upper') | list }}",
       "1|1|[3, 1]|[2]|['A', 'B']"},
      {"{{ [1, 2, 1, 3] | unique | list }}|{{ ['A', 'a', 'b'] | unique | list }}|{{ 2.5 | round "
       "}}|{{ 3.14159 | round(2) }}|{{ 2.1 | round(0, 'ceil') }}|{{ -3 | abs }}|{{ -2.5 | abs }}",
       "[1, 2, 3]|['A', 'b']|2.0|3.14|3.0|3|2.5"},
      {"{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(4, true) }}|{{ 'a\\n\\nb' | indent(2, "
       "blank=true) }}",
       "a\n  b\n\n  c|    a\n    b|a\n  \n  b"},
      {"{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ ['b', 'A', 'c'] | sort }}|{{ msgs | "
       "sort(attribute='role') | map(attribute='content') | join(',') }}|{{ l | reverse | list "
       "}}|{{ l | sum }}|{{ l | min }}|{{ l | max }}",
       "[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|yo,hi,bye|[2, 1, 3]|6|1|3"},
      {"{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ u | tojson }}|{{ 'a\"b\\n' | tojson }}|{{ f "
       "| tojson }}|{{ t | tojson }}",
       "{\"b\": 1, \"a\": [true, null], \"c\": \"x\"}|{\n  \"b\": 1,\n  \"a\": [\n    true,\n    "
       "null\n  ],\n  \"c\": \"x\"\n}|\"ünï✓\"|\"a\\\"b\\n\"|2.5|null"},
      {"{{ '<a>' | safe }}|{{ '<a>' | e }}|{{ '<b>' | safe + '<i>' }}|{{ '<b>' ~ ('<i>' | safe) }}",
       "<a>|&lt;a&gt;|<b>&lt;i&gt;|<b><i>"},
  });
}

TEST(JinjaTest, AppliesTests) {
  ExpectRenders({
      {"{{ n is defined }}|{{ nope is defined }}|{{ nope is undefined }}|{{ t is none }}|{{ n is "
       "none }}|{{ s is string }}|{{ n is string }}",
       "True|False|True|True|False|True|False"},
      {"{{ n is number }}|{{ f is number }}|{{ true is number }}|{{ n is integer }}|{{ f is float "
       "}}|{{ d is mapping }}|{{ l is mapping }}",
       "True|True|True|True|True|True|False"},
      {"{{ l is iterable }}|{{ s is iterable }}|{{ n is iterable }}|{{ d is iterable }}|{{ l is "
       "sequence }}|{{ true is boolean }}|{{ 1 is boolean }}",
       "True|True|False|True|True|True|False"},
      {"{{ true is true }}|{{ 1 is true }}|{{ false is false }}|{{ 'a' is equalto 'a' }}|{{ 1 is "
       "eq 2 }}|{{ 3 is odd }}|{{ 3 is even }}|{{ 9 is divisibleby 3 }}",
       "True|False|True|True|False|True|False|True"},
      {"{{ 2 is in l }}|{{ 'x' is in 'xyz' }}|{{ n is not none }}|{{ not n is none }}|{{ 'ABC' is "
       "upper }}|{{ 'abc' is lower }}|{{ n is gt 3 }}|{{ n is le 3 }}",
       "True|True|True|True|True|True|True|False"},
  });
}

TEST(JinjaTest, RunsStatements) {
  ExpectRenders({
      {"{% for m in msgs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
       "}}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
      {"{% for m in msgs %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ "
       "loop.nextitem.role if loop.nextitem is defined else '-' }} {% endfor %}",
       "->assistant user>user assistant>- "},
      {"{% for m in msgs if m.role == 'user' %}{{ loop.index }}:{{ m.content }} {% endfor %}|{% "
       "for x in [] %}x{% else %}empty{% endfor %}",
       "1:hi 2:bye |empty"},
      {"{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif "
       "%}{{ x }}{% endfor %}",
       "3"},
      {"{% for k, v in d.items() %}{{ k }}{% endfor %}|{% for a, b in [(1, 2), (3, 4)] %}{{ a + b "
       "}}{% endfor %}|{% for c in 'ab' %}{{ c }}.{% endfor %}|{% for k in d %}{{ k }}{% endfor %}",
       "bac|37|a.b.|bac"},
      {"{% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}|{% set ns = "
       "namespace(x=1, y='a') %}{% for i in l %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ "
       "ns.y }}",
       "1|7a"},
      {"{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}|{% if t %}t{% endif %}|{% "
       "set a, b = 1, 2 %}{{ a }}{{ b }}",
       "mid||12"},
      {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') "
       "}}|{{ greet('Bob', '?') }}|{{ greet(punct='.', name='Cy') }}",
       "Hi Ann!|Hi Bob?|Hi Cy."},
      {"{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1) | int }}{% endif %}{% "
       "endmacro %}{{ fact(5) }}",
       "120"},
      {"{% set block %}  Inner {{ n }}  {% endset %}[{{ block }}]|{% filter upper %}shout {{ s | "
       "trim }}{% endfilter %}|{% set t2 | trim %}  padded  {% endset %}[{{ t2 }}]",
       "[  Inner 7  ]|SHOUT HELLO WORLD|[padded]"},
      {"{% raw %}{{ not rendered }}{% endraw %}|{{ range(3) | list }}|{{ range(1, 7, 2) | list "
       "}}|{{ dict(a=1, b='x') }}|{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}",
       "{{ not rendered }}|[0, 1, 2]|[1, 3, 5]|{'a': 1, 'b': 'x'}|aba"},
  });
}

TEST(JinjaTest, ControlsWhitespaceLikeTransformers) {
  ExpectRenders({
      {"a\n{% if true %}\nb\n{% endif %}\nc\n", "a\nb\nc"},
      {"a\n    {% if true %}\n    b\n    {% endif %}\nc", "a\n    b\nc"},
      {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
      {"a\n  {{- 'b' -}}\n  c", "abc"},
      {"x {#- comment -#} y\n  {# own line #}\nz", "xy\nz"},
      {"line\n  {%+ if true %}kept{% endif %}\n", "line\n  kept"},
      {"{% if true +%}\nnewline kept{% endif %}", "\nnewline kept"},
      {"  {{ 'var tags are not lstripped' }}\n{% for i in [1, 2] %}\n  - {{ i }}\n{% endfor %}\n",
       "  var tags are not lstripped\n  - 1\n  - 2\n"},
      {"tail newline kept once\n\n", "tail newline kept once\n"},
      {"a\r\nb\rc", "a\nb\nc"},
  });
}

TEST(JinjaTest, WithoutTrimSettingsKeepsBlockWhitespace) {
  ExpectRenders(
      {
          {"a\n{% if true %}\nb\n{% endif %}\nc", "a\n\nb\n\nc"},
          {"x\n  {% if true %}y{% endif %}", "x\n  y"},
      },
      /*trim=*/false);
}

TEST(JinjaTest, UndefinedValuesAreFalsyEmptyAndIterableButNotOperands) {
  ExpectRenders({
      {"[{{ nope }}]{{ nope is defined }}{{ not nope }}{% for x in nope %}x{% endfor %}"
       "{{ nope | length }}{{ nope == nope }}{{ d.missing is defined }}",
       "[]FalseTrue0TrueFalse"},
  });
}

struct ErrorCase {
  std::string source;
  std::string message;  // the full kInvalidArgument message
};

TEST(JinjaTest, ReportsSyntaxErrorsWithPosition) {
  const std::vector<ErrorCase> cases = {
      {"{% if %}", "template error at 1:7: expected an expression, found '%}'"},
      {"a\n{% endfor %}", "template error at 2:4: unknown tag 'endfor'"},
      {"{% for x in l %}",
       "template error at 1:17: unexpected end of template, expected "
       "{% else %} or {% endfor %}"},
      {"{% for x l %}", "template error at 1:10: expected 'in', found 'l'"},
      {"{{ 1 + }}", "template error at 1:8: expected an expression, found '}}'"},
      {"{{ (1 }}", "template error at 1:1: unterminated tag: expected '}}'"},
      {"{% include 'x' %}", "template error at 1:4: unsupported tag 'include'"},
      {"{% frobnicate %}", "template error at 1:4: unknown tag 'frobnicate'"},
      {"{% break %}", "template error at 1:4: 'break' outside of a loop"},
      {"{{ 'abc }}", "template error at 1:4: unterminated string literal"},
      {"x {# never closed", "template error at 1:3: unterminated comment"},
      {"{{ x $ y }}", "template error at 1:6: unexpected character '$'"},
      {"{{ x | nofilter }}", "template error at 1:8: no filter named 'nofilter'"},
      {"{{ x is notatest }}", "template error at 1:9: no test named 'notatest'"},
      {"{% raw %}never ends",
       "template error at 1:1: unterminated raw block: expected "
       "'{% endraw %}'"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(Render(c.source), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.source;
  }
}

TEST(JinjaTest, ReportsRuntimeErrorsWithPosition) {
  const std::vector<ErrorCase> cases = {
      {"{{ nope.attr }}", "template error at 1:8: 'nope' is undefined"},
      {"{{ d.missing.deeper }}",
       "template error at 1:13: 'dict object' has no attribute "
       "'missing'"},
      {"\n  {{ nope + 1 }}", "template error at 2:11: 'nope' is undefined"},
      {"{{ 1 + 'a' }}",
       "template error at 1:6: unsupported operand type(s) for +: 'int' and "
       "'str'"},
      {"{{ 1 / 0 }}", "template error at 1:6: division by zero"},
      {"{{ n() }}", "template error at 1:4: 'int' object is not callable"},
      {"{{ nope | tojson }}", "template error at 1:11: 'nope' is undefined"},
      {"{% for a, b in l %}{% endfor %}",
       "template error at 1:4: 'int' object is not "
       "iterable"},
      {"{% for x in n %}{% endfor %}", "template error at 1:13: 'int' object is not iterable"},
      {"{% set d.x = 1 %}",
       "template error at 1:4: cannot assign attribute on non-namespace "
       "object 'd'"},
      {"{{ 'a' < 1 }}", "template error at 1:8: '<' not supported between 'str' and 'int'"},
      {"{{ 9223372036854775807 + 1 }}", "template error at 1:24: integer overflow"},
      {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",
       "template error at 1:34: macro 'm' takes not more than 1 argument(s)"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(Render(c.source), StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.source;
  }
}

TEST(JinjaTest, BoundsRecursionOutputAndLoops) {
  RenderOptions limits;
  limits.max_call_depth = 10;
  limits.max_output_bytes = 100;
  limits.max_loop_iterations = 50;
  EXPECT_THAT(Render("{% macro r(k) %}{{ r(k + 1) }}{% endmacro %}{{ r(0) }}", true, limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "template exceeds the limit of 10 nested calls"));
  EXPECT_THAT(Render("{% for i in range(40) %}abc{% endfor %}", true, limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "template output exceeds the limit of 100 bytes"));
  EXPECT_THAT(Render("{% for i in range(10) %}{% for j in range(10) %}{% endfor %}{% endfor %}",
                     true, limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "template exceeds the limit of 50 loop iterations"));
  EXPECT_THAT(Render("{{ 'x' * 100000000 }}"), StatusIs(absl::StatusCode::kResourceExhausted,
                                                        "sequence repetition result too large"));
}

// A template is file data: `~` doubling a string must stop at the sequence limit (before,
// bad_alloc terminated the worker rendering the model's template).
TEST(JinjaTest, BoundsStringConcatenation) {
  EXPECT_THAT(Render("{% set x = 'x' * 9000000 %}{{ x ~ x }}"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("string concatenation")));
  EXPECT_THAT(Render("{{ 'a' ~ 1 ~ none }}"), IsOkAndHolds("a1None"));
}

TEST(JinjaTest, RangeStopsAtTheInt64LimitsInsteadOfOverflowing) {
  // The step past the last item would overflow int64 (UB that UBSan reports).
  ExpectRenders({
      {"{{ range(9223372036854775800, 9223372036854775807, 5) | list }}",
       "[9223372036854775800, 9223372036854775805]"},
      {"{{ range(-9223372036854775800, -9223372036854775807 - 1, -5) | list }}",
       "[-9223372036854775800, -9223372036854775805]"},
  });
}

TEST(JinjaTest, HugeIndentWidthsAreErrorsNotCrashes) {
  // A width of INT64_MAX used to throw std::length_error, which aborted the process.
  EXPECT_THAT(Render("{{ 'a\nb' | indent(9223372036854775807) }}"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("indent width 9223372036854775807 is over 16777216")));
  EXPECT_THAT(
      Render("{{ ('x\n' * 1000) | indent(100000) }}"),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("indent result exceeds the limit")));
  EXPECT_THAT(Render("{{ 'a\nb' | indent(1.5) }}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("indent width must be an int or str")));
  // tojson repeats the indent at every level; INT_MAX overflowed `indent * level`.
  EXPECT_THAT(Render("{{ [[1]] | tojson(indent=2147483647) }}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tojson indent 2147483647 is over 1024")));
  ExpectRenders({
      {"{{ 'a\nb' | indent(true) }}", "a\n b"},
      {"{{ [1] | tojson(indent=-3) }}", "[\n1\n]"},
  });
}

TEST(JinjaTest, DoublingConcatenationsStopAtTheSequenceLimit) {
  // '~' and list '+' had no size limit: 30 doublings built a 1 GiB string (21 s under
  // ASan) or a list of 2^30 values (minutes, gigabytes); the value-size bound stops both.
  EXPECT_THAT(Render("{% set ns = namespace(s='x') %}{% for i in range(30) %}"
                     "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("exceeds the limit of 16777216 bytes")));
  EXPECT_THAT(Render("{% set ns = namespace(l=[1]) %}{% for i in range(30) %}"
                     "{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("exceeds the limit of 16777216 bytes")));
  ExpectRenders({{"{{ 'a' ~ 1 ~ [2] }}|{{ ([1] + [2]) | length }}", "a1[2]|2"}});
}

TEST(JinjaTest, LongOperatorChainsCountTowardTheNestingLimit) {
  // a + b + c ... builds a left-deep tree as deep as the chain; 100,000 links overflowed
  // the stack when the tree was checked, evaluated or freed (ASan: stack-overflow).
  auto chain = [](const std::string& head, const std::string& link, int n) {
    std::string s = "{{ " + head;
    for (int i = 0; i < n; ++i) s += link;
    return s + " }}";
  };
  for (const std::string& source :
       {chain("1", " + 1", 100000), chain("'a'", " ~ 'a'", 100000), chain("1", " and 1", 100000),
        chain("1", " or 1", 100000), chain("1", " < 2", 100000), chain("msgs", ".x", 100000),
        chain("msgs", "[0]", 100000), chain("1", " | string", 100000),
        chain("1", " is number", 100000), chain("1", " if 1", 100000)}) {
    EXPECT_THAT(Render(source), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("nesting deeper than 200 levels")))
        << source.substr(0, 20);
  }
  ExpectRenders({{chain("1", " + 1", 99), "100"}, {chain("s", " | trim", 50), "Hello World"}});
}

TEST(JinjaTest, LexesALongOneLineTemplateInLinearTime) {
  // 120,000 tokens on one 280 KB line: counting each token's column from the line start
  // took minutes (quadratic); counting on from the previous token takes milliseconds. The
  // bound is 20x the time measured under ASan on a loaded machine (1 s).
  std::string source;
  for (int i = 0; i < 40000; ++i) source += "{{ 1 }}";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(Render(source), IsOkAndHolds(std::string(40000, '1')));
  // The column of an error at the end of the line is still exact.
  EXPECT_THAT(Render(source + "{{ ) }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("error at 1:280004:")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(JinjaTest, RejectsNestingDeeperThanTheParserLimit) {
  EXPECT_THAT(Render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 200")));
  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if true %}";
  EXPECT_THAT(Render(ifs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 200")));
}

TEST(JinjaTest, RefusesANamespaceInsideAnotherValue) {
  // A namespace is the one mutable value: inside a list, dict or namespace it could make a
  // value that holds itself (printing it would never end) or grows after it was measured.
  for (const char* source : {
           "{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}ok",
           "{% set a = namespace() %}{% set a.self = a %}{{ a }}",
           "{% set a = namespace() %}{% set a.x = [a] %}{{ a }}",
           "{% set a = namespace() %}{{ [a] }}",
           "{% set a = namespace() %}{{ {'k': a}|tojson }}",
       }) {
    EXPECT_THAT(Render(source),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("a namespace() object cannot be put in a list, a dict or a "
                                   "namespace")))
        << source;
  }
  EXPECT_THAT(Render("{% set a = namespace(n=[1, 2]) %}{% set a.n = a.n + [3] %}{{ a.n }}"),
              IsOkAndHolds("[1, 2, 3]"));
}

// Templates that grow values without printing them, or print a structure that shares its
// parts (found by jinja_fuzzer): each hung or exhausted memory before the value limits.
TEST(JinjaTest, BoundsTheSizeDepthAndTotalOfComputedValues) {
  RenderOptions limits;
  limits.max_value_bytes = 1 << 16;
  limits.max_computed_bytes = 1 << 22;
  const std::string doubling =
      "{% set ns = namespace(v=X) %}{% for i in range(100) %}"
      "{% set ns.v = OP %}{% endfor %}{{ ns.v|length }}";
  struct Case {
    std::string name;
    std::string source;
    std::string message;
  };
  auto grow = [&](const std::string& start, const std::string& op) {
    return absl::StrReplaceAll(doubling, {{"X", start}, {"OP", op}});
  };
  const std::vector<Case> cases = {
      {"list doubling", grow("[1]", "ns.v + ns.v"), "template value exceeds the limit of 65536"},
      {"string doubling with ~", grow("'ab'", "ns.v ~ ns.v"),
       "template value exceeds the limit of 65536"},
      {"shared tree", grow("'ab'", "[ns.v, ns.v]"), "template value exceeds the limit of 65536"},
      {"nested tojson", grow("'ab'", "ns.v|tojson"), "exceeds the limit of 65536"},
      {"replace growth", grow("'abcdefgh'", "ns.v|replace('a', ns.v)"), "exceeds the limit"},
      {"deep nesting", absl::StrReplaceAll(grow("1", "[ns.v]"), {{"range(100)", "range(200)"}}),
       "template value nests deeper than the limit of 128 levels"},
      {"quadratic copying",
       "{% set ns = namespace(v=range(3000)|list) %}{% for i in range(1000) %}"
       "{% set ns.v = ns.v + [] %}{% endfor %}",
       "template computes more than the limit of 4194304 bytes of values"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Render(c.source, true, limits),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr(c.message)))
        << c.name;
  }
  // Amplifiers checked while they build their result, with the default limits.
  const std::vector<Case> amplifiers = {
      {"list repetition counts the items' bytes", "{{ (['x' * 1000000] * 10000)|length }}",
       "sequence repetition result too large"},
      {"huge indent", "{{ 'a\\nb'|indent(10000000000) }}", "indent width 10000000000 is over"},
      {"huge join", "{{ range(100)|join('x' * 10000000) }}", "join result exceeds the limit"},
      {"huge str.join", "{{ ('x' * 10000000).join(['a', 'b', 'c']) }}",
       "join() result exceeds the limit"},
      {"wide tojson of a big value", "{{ ([[[[1, 2, 3]]]] * 100000)|tojson(indent=1000) }}",
       "tojson result exceeds the limit"},
      {"huge replace", "{{ ('a' * 10000)|replace('a', 'b' * 10000) }}",
       "replace() result exceeds the limit"},
      {"iterating a huge string", "{% for c in 'x' * 16000000 %}{% break %}{% endfor %}",
       "a string of 16000000 bytes is too long to iterate (limit 1048576)"},
      {"listing a huge string", "{{ ('x' * 16000000)|list|length }}", "too long to iterate"},
  };
  for (const Case& c : amplifiers) {
    EXPECT_THAT(Render(c.source),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr(c.message)))
        << c.name;
  }
  // Looking a value up makes nothing: a loop may read a large variable on every iteration
  // (as templates read `messages|length`) without using up max_computed_bytes.
  EXPECT_THAT(Render("{% set big = 'x' * 60000 %}{% for i in range(1000) %}"
                     "{% if big|length != 60000 %}?{% endif %}{% endfor %}ok",
                     true, limits),
              IsOkAndHolds("ok"));
  // Within the limits the same constructions render.
  EXPECT_THAT(
      Render(absl::StrReplaceAll(grow("[1]", "ns.v + ns.v"), {{"100", "10"}}), true, limits),
      IsOkAndHolds("1024"));
}

}  // namespace
TEST(JinjaTest, ValuesNestedDeepAtRunTimeStopAtTheDepthLimit) {
  // A list wrapped in a list 5000 times overflowed the stack when printed or serialised.
  for (const char* use : {"{{ ns.s | tojson }}", "{{ ns.s }}", "{{ ns.s | string }}"}) {
    EXPECT_THAT(Render("{% set ns = namespace(s=1) %}{% for i in range(5000) %}"
                       "{% set ns.s = [ns.s] %}{% endfor %}" +
                       std::string(use)),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         HasSubstr("nests deeper than the limit of 128 levels")))
        << use;
  }
}

}  // namespace tandem::chat::jinja
