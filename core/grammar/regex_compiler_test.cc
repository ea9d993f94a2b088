#include "core/grammar/regex_compiler.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "core/base/status_matchers.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"
#include "core/grammar/grammar_matcher.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

struct MatchCase {
  std::string pattern;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

// Compiles `pattern` and checks every accepted and rejected string against it.
void ExpectMatches(const MatchCase& c) {
  SCOPED_TRACE("pattern: " + c.pattern);
  absl::StatusOr<Grammar> grammar = CompileRegex(c.pattern);
  ASSERT_THAT(grammar, IsOk());
  for (const std::string& text : c.accepted) {
    EXPECT_TRUE(GrammarMatches(*grammar, text)) << "should accept \"" << text << "\"";
  }
  for (const std::string& text : c.rejected) {
    EXPECT_FALSE(GrammarMatches(*grammar, text)) << "should reject \"" << text << "\"";
  }
}

TEST(RegexCompilerTest, MatchesExactlyTheStringsThePatternMatchesInFull) {
  const std::vector<MatchCase> cases = {
      {"abc", {"abc"}, {"", "ab", "abcd", "ABC", "xabc"}},
      {"", {""}, {"a"}},
      {"a|bc|", {"a", "bc", ""}, {"abc", "b"}},
      {"colou?r", {"color", "colour"}, {"colouur", "colr"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,3}", {"aa", "aaa"}, {"a", "aaaa"}},
      {"a{2,}", {"aa", "aaaaaaa"}, {"a", ""}},
      {"a{0}b", {"b"}, {"ab"}},
      {"a{0,0}b{1}", {"b"}, {"ab", "bb"}},
      {"x*", {"", "x", "xxxx"}, {"y"}},
      {"(?:ab)+", {"ab", "abab"}, {"", "aba", "ba"}},
      {"(a|b)*c", {"c", "ababc", "bbc"}, {"ab", "abcc"}},
      {"(?<year>\\d{2})-(\\w+)", {"24-x_Y9"}, {"24-", "24-\xC3\xA9", "2-a"}},
      {"a*?b+?c??d{1,2}?", {"bd", "aabbcdd"}, {"cd", "abcddd"}},
      {"()", {""}, {"a"}},
      {"(|a)+", {"", "a", "aa"}, {"b"}},
      {"(a*)*", {"", "aaa"}, {"b"}},
      {"(a?b?c?)*", {"", "c", "ba", "abcca"}, {"d", "abd"}},
      {"(?:a|b|)*c", {"c", "abbac"}, {"ab"}},
      {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E+",
       {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE8\xAA\x9E"},
       {"\xE6\x97\xA5\xE6\x9C\xAC"}},
      {"^a|^b$|c$", {"a", "b", "c"}, {"ab", "", "^a"}},
      {"^$", {""}, {"a"}},
  };
  for (const MatchCase& c : cases) ExpectMatches(c);
}

TEST(RegexCompilerTest, MatchesJsonSchemaStylePatterns) {
  const std::vector<MatchCase> cases = {
      {"^\\d{4}-\\d{2}-\\d{2}$",
       {"2024-07-26", "0000-00-00"},
       {"2024-7-26", "20240-07-26", "2024-07-26\n",
        "\xEF\xBC\x92"
        "024-07-26",
        ""}},
      {"[A-Z]{3}-\\d+", {"ABC-1", "XYZ-0042"}, {"AB-1", "ABC-", "abc-1", "ABCD-1"}},
      {"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$",
       {"a.b+c@example.co.uk", "x_y%z@host-1.io"},
       {"a@b", "@example.com", "a b@example.com", "a@example.c"}},
      {"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
       {"123e4567-e89b-12d3-a456-426614174000"},
       {"123e4567-e89b-12d3-a456-42661417400", "123E4567-e89b-12d3-a456-426614174000"}},
      {"^\\+?[1-9]\\d{1,14}$", {"+14155552671", "442071838750"}, {"+0123", "+1", "12a"}},
      {"^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$",
       {"555-1212", "(888)555-1212"},
       {"(888)-555-1212", "555-12123"}},
      {"[\\u00C0-\\u00FF]+", {"\xC3\xA9\xC3\xA0", "\xC3\xBF"}, {"e", "\xC4\x80"}},
      {"^[^\\x00-\\x1F\"\\\\]*$", {"plain text \xC3\xA9"}, {"a\"b", "a\\b", "a\tb"}},
  };
  for (const MatchCase& c : cases) ExpectMatches(c);
}

TEST(RegexCompilerTest, DotMatchesAnyCodePointButLineTerminators) {
  ExpectMatches({".",
                 {"a", "\t", "\xC3\xA9", "\xF0\x9F\x98\x80", std::string(1, '\0'), "\xC2\x85"},
                 {"", "\n", "\r", "\xE2\x80\xA8", "\xE2\x80\xA9", "ab"}});
}

TEST(RegexCompilerTest, ClassEscapesFollowEcmaScript) {
  // \s: the WhiteSpace and LineTerminator code points, not U+0085 nor U+200B.
  ExpectMatches({"\\s",
                 {"\t", "\n", "\v", "\f", "\r", " ", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80",
                  "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
                  "\xE3\x80\x80", "\xEF\xBB\xBF"},
                 {"a", "\xC2\x85", "\xE2\x80\x8B", "\xE1\xA0\x8E", ""}});
  ExpectMatches({"\\S", {"a", "\xC2\x85", "\xE2\x80\x8B"}, {" ", "\xC2\xA0", "\n"}});
  ExpectMatches({"\\d", {"0", "9"}, {"a", "\xD9\xA0", "\xEF\xBC\x90"}});
  ExpectMatches({"\\D", {"a", "\xD9\xA0"}, {"0", "5"}});
  ExpectMatches({"\\w+", {"a_Z9", "_"}, {"\xC3\xA9", "-", "a b"}});
  ExpectMatches({"\\W", {"\xC3\xA9", "-", " "}, {"_", "a", "0"}});
}

TEST(RegexCompilerTest, ClassesTakeRangesEscapesAndNegation) {
  const std::vector<MatchCase> cases = {
      {"[^a-c]", {"d", "\xC3\xA9", "\n"}, {"a", "b", "c", ""}},
      {"[\\d\\s]", {"5", " ", "\xE3\x80\x80"}, {"a", "\xC2\x85"}},
      {"[\\D]", {"a"}, {"5"}},
      {"[^\\D]", {"5"}, {"a"}},
      {"[^\\s\\d]", {"a"}, {" ", "1"}},
      {"[\\w-]+", {"a-b_c"}, {"a.b"}},
      {"[a-]", {"a", "-"}, {"b"}},
      {"[-a]", {"a", "-"}, {"b"}},
      {"[a-c-e]", {"a", "b", "-", "e"}, {"d"}},
      {"[\\b]", {"\b"}, {"b"}},
      {"[.*+?(){}|^$]+", {".*+?(){}|^$"}, {"a"}},
      {"[\\]\\[\\\\\\-]+", {"][\\-"}, {"a"}},
      {"[^]", {"\n", "a", "\xF0\x9F\x98\x80"}, {"", "ab"}},
      {"[\xF0\x9F\x98\x80-\xF0\x9F\x98\x82]", {"\xF0\x9F\x98\x81"}, {"\xF0\x9F\x98\x83"}},
      {"[\\uD83D\\uDE00-\\uD83D\\uDE4F]",
       {"\xF0\x9F\x98\x80", "\xF0\x9F\x99\x8F"},
       {"\xF0\x9F\x99\x90"}},
      {"[\\u{10000}-\\u{10FFFF}]", {"\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}, {"\xEF\xBF\xBF"}},
  };
  for (const MatchCase& c : cases) ExpectMatches(c);
}

TEST(RegexCompilerTest, EscapesStandForTheirCodePoints) {
  const std::vector<MatchCase> cases = {
      {"\\n\\r\\t\\f\\v\\0", {std::string("\n\r\t\f\v\0", 6)}, {"nrtfv0"}},
      {"\\x41\\u00e9\\u{1F600}\\uD83D\\uDE00",
       {"A\xC3\xA9\xF0\x9F\x98\x80\xF0\x9F\x98\x80"},
       {"x41"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/\\^\\$\\-", {".*+?()[]{}|\\/^$-"}, {""}},
      {"\\cJ\\cm", {"\n\r"}, {"cJcm"}},
      {"a\\ b\\\"c\\'d\\:e", {"a b\"c'd:e"}, {}},
  };
  for (const MatchCase& c : cases) ExpectMatches(c);
}

// Ambiguous and nested repetitions run as an NFA: 30 characters of input stay quick (the test
// finishing is the assertion).
TEST(RegexCompilerTest, PathologicalPatternsMatchWithoutBlowingUp) {
  const std::string as(30, 'a');
  ExpectMatches({"(a*)*b", {as + "b", "b"}, {as, as + "c"}});
  ExpectMatches({"(a|a)*", {as, ""}, {as + "b"}});
  ExpectMatches({"(a|aa)+$", {as, "a"}, {as + "b", ""}});
  ExpectMatches({"(a+)+b", {as + "b"}, {as}});
  ExpectMatches({"(.*a){10}", {as}, {std::string(9, 'a')}});
  ExpectMatches({"(a?){30}a{30}", {as, as + as}, {as + as + "a"}});
  ExpectMatches({"((a|b|ab)*c)*", {"ababc" + as + "c"}, {as + "ab"}});
}

TEST(RegexCompilerTest, LongAlternationsAndSequencesCompileLinearly) {
  std::string alternation;
  std::string sequence;
  for (int i = 0; i < 2000; ++i) {
    alternation += (i ? "|" : "") + std::to_string(i);
    sequence += "(a|b)";
  }
  ExpectMatches({alternation, {"0", "1999", "777"}, {"2000", ""}});
  ExpectMatches({sequence,
                 {std::string(2000, 'a'), std::string(1000, 'a') + std::string(1000, 'b')},
                 {std::string(1999, 'a')}});
}

TEST(RegexCompilerTest, SearchModeLetsUnanchoredEndsMatchAnyText) {
  struct SearchCase {
    std::string pattern;
    std::vector<std::string> accepted;
    std::vector<std::string> rejected;
  };
  const std::vector<SearchCase> cases = {
      {"abc", {"abc", "xxabc", "abcyy", "x\nabc\ny"}, {"ab", "acb"}},
      {"^abc", {"abc", "abcyy"}, {"xabc"}},
      {"abc$", {"abc", "xxabc"}, {"abcx"}},
      {"^abc$", {"abc"}, {"xabc", "abcx"}},
      {"", {"", "anything"}, {}},
      {"^a|b$", {"a", "axx", "b", "xxb"}, {"xa", "bx"}},
  };
  for (const SearchCase& c : cases) {
    SCOPED_TRACE("pattern: " + c.pattern);
    GrammarBuilder builder;
    const int32_t root = builder.AddRule("root");
    RegexOptions options;
    options.search = true;
    absl::StatusOr<GrammarExpr> expr = RegexToExpr(c.pattern, builder, options);
    ASSERT_THAT(expr, IsOk());
    ASSERT_THAT(builder.DefineRule(root, *std::move(expr)), IsOk());
    absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
    ASSERT_THAT(grammar, IsOk());
    for (const std::string& text : c.accepted) EXPECT_TRUE(GrammarMatches(*grammar, text)) << text;
    for (const std::string& text : c.rejected) EXPECT_FALSE(GrammarMatches(*grammar, text)) << text;
  }
}

TEST(RegexCompilerTest, RegexToExprKeepsLiteralsWholeAndRepetitionsUnexpanded) {
  GrammarBuilder builder;
  absl::StatusOr<GrammarExpr> expr = RegexToExpr("ab\\.c\\d{4}", builder);
  ASSERT_THAT(expr, IsOk());
  ASSERT_EQ(expr->kind, GrammarExpr::Kind::kSequence);
  ASSERT_EQ(expr->children.size(), 2u);
  EXPECT_EQ(expr->children[0].kind, GrammarExpr::Kind::kLiteral);
  EXPECT_EQ(expr->children[0].literal, "ab.c");
  const GrammarExpr& repeat = expr->children[1];
  ASSERT_EQ(repeat.kind, GrammarExpr::Kind::kRepeat);
  EXPECT_EQ(repeat.min, 4);
  EXPECT_EQ(repeat.max, 4);
  ASSERT_EQ(repeat.children[0].kind, GrammarExpr::Kind::kCharClass);
  ASSERT_EQ(repeat.children[0].ranges.size(), 1u);
  EXPECT_EQ(repeat.children[0].ranges[0].lo, uint32_t{'0'});
  EXPECT_EQ(repeat.children[0].ranges[0].hi, uint32_t{'9'});
}

struct ErrorCase {
  std::string pattern;
  std::string message;  // a substring of the error's message
};

TEST(RegexCompilerTest, RefusesUnsupportedConstructsNamingThemAndTheirOffset) {
  const std::vector<ErrorCase> cases = {
      {"(a)\\1", "regex at byte 3: backreference '\\1' is not supported"},
      {"(a)\\12", "backreference '\\12'"},
      {"(?<n>a)\\k<n>", "regex at byte 7: named backreference '\\k'"},
      {"a(?=b)", "regex at byte 1: lookahead '(?='"},
      {"a(?!b)", "regex at byte 1: lookahead '(?!'"},
      {"(?<=a)b", "regex at byte 0: lookbehind '(?<='"},
      {"(?<!a)b", "regex at byte 0: lookbehind '(?<!'"},
      {"\\bword", "regex at byte 0: word boundary '\\b'"},
      {"a\\B", "regex at byte 1: word boundary '\\B'"},
      {"[\\B]", "regex at byte 1: word boundary '\\B'"},
      {"(?i)abc", "regex at byte 0: group modifier or inline flags '(?i'"},
      {"(?i:abc)", "inline flags '(?i'"},
      {"(?P<x>a)", "inline flags '(?P'"},
      {"\\p{L}", "regex at byte 0: Unicode property escape '\\p'"},
      {"x[\\P{L}]", "regex at byte 2: Unicode property escape '\\P'"},
      {"\\a", "regex at byte 0: unknown escape '\\a'"},
      {"ab\\z", "regex at byte 2: unknown escape '\\z'"},
      {"\\\xC3\xA9", "unknown escape '\\\xC3\xA9'"},
      {"a^b", "regex at byte 1: anchor '^'"},
      {"^^a", "regex at byte 1: anchor '^'"},
      {"a$b", "regex at byte 1: anchor '$'"},
      {"a$$", "regex at byte 1: anchor '$'"},
      {"(^a)", "regex at byte 1: anchor '^'"},
      {"(a$)", "regex at byte 2: anchor '$'"},
      {"^*a", "regex at byte 1: quantifier '*' has nothing to repeat"},
      {"*a", "regex at byte 0: quantifier '*' has nothing to repeat"},
      {"a**", "regex at byte 2: quantifier '*' has nothing to repeat"},
      {"a|+", "regex at byte 2: quantifier '+' has nothing to repeat"},
      {"(?a)", "regex at byte 0: group modifier"},
      {"a{2}{3}", "regex at byte 4: quantifier '{' has nothing to repeat"},
      {"a{2", "regex at byte 1: '{' is not a quantifier"},
      {"a{,3}", "regex at byte 1: '{' is not a quantifier"},
      {"a{x}", "regex at byte 1: '{' is not a quantifier"},
      {"a{3,2}", "regex at byte 1: quantifier '{3,2}' has its maximum below its minimum"},
      {"a}", "regex at byte 1: lone '}'"},
      {"a]", "regex at byte 1: lone ']'"},
      {"(a", "regex at byte 0: '(' is never closed"},
      {"((a)", "regex at byte 0: '(' is never closed"},
      {"a)", "regex at byte 1: ')' closes no group"},
      {"[a", "regex at byte 0: '[' is never closed"},
      {"[a\\]", "regex at byte 0: '[' is never closed"},
      {"x[z-a]", "regex at byte 2: range out of order"},
      {"[\\d-z]", "regex at byte 1: a class escape"},
      {"[a-\\w]", "regex at byte 1: a class escape"},
      {"\\x4", "regex at byte 0: '\\x' needs two hex digits"},
      {"\\u12", "regex at byte 0: '\\u' needs four hex digits"},
      {"\\u{110000}", "regex at byte 0: '\\u{110000}' is past U+10FFFF"},
      {"\\u{}", "regex at byte 0: '\\u{' needs hex digits"},
      {"\\u{12", "regex at byte 0: '\\u{' needs hex digits"},
      {"a\\uD83D", "regex at byte 1: lone surrogate '\\uD83D'"},
      {"\\uDE00", "lone surrogate '\\uDE00'"},
      {"\\uD83D\\u0041", "lone surrogate '\\uD83D'"},
      {"\\u{D800}", "lone surrogate '\\u{D800}'"},
      {"\\012", "regex at byte 0: octal escape '\\01'"},
      {"\\c1", "regex at byte 0: '\\c' needs a letter"},
      {"abc\\", "regex at byte 3: the pattern ends with a lone '\\'"},
      {"(?<1a>x)", "regex at byte 0: group name has '1' at byte 3"},
      {"(?<a-b>x)", "group name has '-' at byte 4"},
      {"(?<a", "regex at byte 0: group name '(?<' is never closed"},
      {"(?<>a)", "regex at byte 0: empty group name"},
      {"a\xFF"
       "b",
       "regex: text is not valid UTF-8 at byte 1"},
      {"ab\xC3", "regex: text is not valid UTF-8 at byte 2"},
      {"\xED\xA0\x80", "regex: text is not valid UTF-8 at byte 0"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(CompileRegex(c.pattern),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << "pattern: " << c.pattern;
  }
}

TEST(RegexCompilerTest, RefusesPatternsPastTheLimitsNamingTheLimit) {
  std::string deep;
  for (int i = 0; i < 201; ++i) deep += "(";
  deep += "a";
  for (int i = 0; i < 201; ++i) deep += ")";
  std::string deep_repeats;
  for (int i = 0; i < 150; ++i) deep_repeats += "(a";
  for (int i = 0; i < 150; ++i) deep_repeats += ")?";
  const std::vector<ErrorCase> cases = {
      {"a{10001}", "regex at byte 1: repetition count 10001 is past max_repeat (10000)"},
      {"a{1,99999999999999999999}", "past max_repeat (10000)"},
      {"(a{1000}){1000}",
       "regex at byte 9: the pattern would lower to more than max_elements "
       "(1000000)"},
      {"((a{100}){100}){100}", "max_elements (1000000)"},
      {"(.{10000}){10000}", "max_elements (1000000)"},
      {"(a{10000}){50}(b{10000}){50}",
       "regex at byte 28: the pattern would lower to more than "
       "max_elements"},
      {deep, "regex at byte 200: groups nest deeper than max_nesting (200)"},
      {deep_repeats, "nest deeper than max_nesting (200)"},
      {std::string(kMaxRegexBytes + 1, 'a'), "regex is 65537 bytes, past the limit of 65536"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(CompileRegex(c.pattern),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << "pattern: " << c.pattern.substr(0, 80);
  }
  EXPECT_THAT(CompileRegex(std::string(kMaxRegexBytes, 'a')), IsOk());
  EXPECT_THAT(CompileRegex("a{10000}"), IsOk());
}

// kInvalidArgument naming `limit` (from the front end, with the offset, or from the builder).
bool NamesLimit(const absl::Status& status, absl::string_view limit) {
  return status.code() == absl::StatusCode::kInvalidArgument &&
         absl::StrContains(status.message(), limit);
}

// Around each pattern's size thresholds, a refusal comes from the front end's estimates
// (naming the offset) or from the builder's own count (naming the limit), never anything else.
TEST(RegexCompilerTest, RefusalsAroundTheSizeLimitsNameTheLimit) {
  const std::vector<std::string> patterns = {
      "a{1000}",    "(a{10}){10}",       "(((a*)*)*)*",    "(a?b?c?d?e?)*",    ".{100}",
      "(a|bc|d*)+", "(x?){3,50}",        "(?:a|b|)*c",     "[^a]*[b-z]+",      "(.*a){10}",
      "((ab)?){5}", "(\\w+\\s*){1,100}", "((a|b)*c){2,7}", "\\S+@\\S+\\.\\S+",
  };
  for (const std::string& pattern : patterns) {
    absl::StatusOr<Grammar> unlimited = CompileRegex(pattern);
    ASSERT_THAT(unlimited, IsOk()) << pattern;
    const int64_t elements = static_cast<int64_t>(unlimited->code.size());
    const int32_t rules = static_cast<int32_t>(unlimited->rules.size());
    for (int64_t max_elements = elements / 2; max_elements <= 2 * elements; ++max_elements) {
      GrammarLimits limits;
      limits.max_elements = max_elements;
      absl::StatusOr<Grammar> grammar = CompileRegex(pattern, limits);
      EXPECT_TRUE(grammar.ok() || NamesLimit(grammar.status(), "max_elements"))
          << pattern << " within " << max_elements << ": " << grammar.status();
    }
    for (int32_t max_rules = rules / 2; max_rules <= 2 * rules; ++max_rules) {
      GrammarLimits limits;
      limits.max_rules = max_rules;
      absl::StatusOr<Grammar> grammar = CompileRegex(pattern, limits);
      EXPECT_TRUE(grammar.ok() || NamesLimit(grammar.status(), "max_rules"))
          << pattern << " within " << max_rules << " rules: " << grammar.status();
    }
  }
}

TEST(RegexCompilerTest, AppliesTheCallersLimits) {
  GrammarLimits limits;
  limits.max_repeat = 5;
  limits.max_nesting = 3;
  limits.max_elements = 100;
  EXPECT_THAT(CompileRegex("a{5}", limits), IsOk());
  EXPECT_THAT(CompileRegex("a{6}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_repeat (5)")));
  EXPECT_THAT(CompileRegex("(((a)))", limits), IsOk());
  EXPECT_THAT(CompileRegex("((((a))))", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("regex at byte 3: groups nest deeper than max_nesting (3)")));
  EXPECT_THAT(CompileRegex("(a{5}){5}", limits), IsOk());
  EXPECT_THAT(CompileRegex("((a{5}){5}){5}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_elements (100)")));
}

}  // namespace
}  // namespace tandem
