#include "core/grammar/gbnf_parser.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

struct GrammarCase {
  const char* name;
  std::string grammar;
  std::vector<std::string> accepts;
  std::vector<std::string> rejects;
};

// Grammars in the spirit of llama.cpp's grammars/ folder, typed from the format description.
const char kArithmetic[] = R"(# integer arithmetic with + - * / and parentheses
root   ::= ws expr
expr   ::= term (("+" | "-") ws term)*
term   ::= factor (("*" | "/") ws factor)*
factor ::= number ws | "(" ws expr ")" ws
number ::= "-"? [0-9]+
ws     ::= [ \t\n]*
)";

const char kJson[] = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{1,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,15})? ws

# optional space: at most one newline, then a bounded indent
ws ::= | " " | "\n" [ \t]{0,20}
)";

const char kList[] = R"(root ::= ("- " item)+
item ::= [^\n]+ "\n"
)";

const char kChess[] = R"(# a game of numbered move pairs
root ::= (
    # the first pair
    "1. " move " " move "\n"

    # then more pairs, numbered with one or two digits
    ([1-9] [0-9]? ". " move " " move "\n")+
)

# a move, maybe giving check or mate
move    ::= (pawn | nonpawn | castle) [+#]?

pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" "-O"?
)";

std::vector<GrammarCase> GrammarCases() {
  return {
      {"Arithmetic", kArithmetic, {"1", "1+2*3", " (1 + 2) * -3\n", "((4))/2-1"},
       {"", "1+", "(1", "1 2", "1++2", "a"}},
      {"Json", kJson,
       {"{}", R"({"a": 1, "b": [true, null, "x\u00e9"], "c": {"d": -0.5e10}})",
        "{\n  \"k\": \"v\"\n}", "{\"\xc3\xa9\": []}"},
       {"[1]", R"({"a" 1})", R"({"a": 01})", R"({"a": "line)" "\n" R"("})", "{",
        R"({"a": tru})"}},
      {"List", kList, {"- apples\n", "- apples\n- pears\n"},
       {"", "- apples", "* apples\n", "- \n"}},
      {"Chess", kChess,
       {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n10. O-O-O Qxd8#\n",
        "1. e4 e5\n2. e8=Q+ Ke7\n"},
       {"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n0x. a3 a6\n", "1. e4  e5\n2. a3 a6\n"}},
      // Literals and their escapes name code points; \xe9 is U+00E9, two bytes in UTF-8.
      {"LiteralEscapes", R"(root ::= "\x41\u00e9\U0001F600\n\t\r\\\"\[\]\-")",
       {"A\xc3\xa9\xf0\x9f\x98\x80\n\t\r\\\"[]-"}, {"A\xe9\xf0\x9f\x98\x80\n\t\r\\\"[]-", ""}},
      {"HexEscapeIsACodePoint", R"(root ::= "\xe9")", {"\xc3\xa9"}, {"\xe9", "e"}},
      {"RawUtf8Literal", "root ::= \"h\xc3\xa9llo \xf0\x9f\x98\x80\"",
       {"h\xc3\xa9llo \xf0\x9f\x98\x80"}, {"hello ", "h\xc3\xa9llo"}},
      {"EmptyLiteral", R"(root ::= "" "a" "")", {"a"}, {"", "aa"}},
      {"Class", R"(root ::= [a-cx\-\]]+)", {"a", "abc-]x", "cc"}, {"", "d", "[", "A"}},
      {"DashFirstAndLastInClass", R"(root ::= [-a] [b-])", {"-b", "a-", "ab"}, {"bb", "--a"}},
      {"UnescapedBracketInClass", R"(root ::= [[(])", {"[", "("}, {"]", ")"}},
      {"NegatedClass", R"(root ::= [^a-z\n])", {"A", "\xc3\xa9", "\xf0\x9f\x98\x80", " "},
       {"a", "z", "\n", "", "AB"}},
      {"ClassOfCodePoints", "root ::= [\xce\xb1-\xcf\x89\\u4e00-\\u9fff]+",
       {"\xce\xb1\xce\xb2", "\xe4\xb8\x80\xcf\x89"}, {"a", "\xce\x91"}},
      {"AnyChar", R"(root ::= . .)", {"ab", "\xc3\xa9\xf0\x9f\x98\x80", "\n\n"},
       {"a", "abc", "", "\xc3"}},
      {"Star", R"(root ::= "ab"*)", {"", "ab", "ababab"}, {"a", "aba", "ba"}},
      {"Plus", R"(root ::= "a"+ "b")", {"ab", "aaab"}, {"b", "a"}},
      {"Optional", R"(root ::= "a"? "b")", {"b", "ab"}, {"aab", "a"}},
      {"Exactly", R"(root ::= [0-9]{3})", {"123"}, {"12", "1234", ""}},
      {"AtLeast", R"(root ::= "a"{2,})", {"aa", "aaaaaa"}, {"", "a"}},
      {"Between", R"(root ::= "a"{1,3} "b"{0,2})", {"a", "aaa", "abb", "aaab"},
       {"", "aaaa", "abbb", "b"}},
      {"SpacesInsideBraces", R"(root ::= "a"{ 1 , 2 })", {"a", "aa"}, {"", "aaa"}},
      {"ZeroRepetitionsIsEmpty", R"(root ::= "a" ("b" x){0}
x ::= "x")",
       {"a"}, {"ab", "abx"}},
      {"StackedRepetitionsMultiply", R"(root ::= "x"{2}{3})", {"xxxxxx"}, {"xx", "xxx", ""}},
      {"RepetitionOfAGroup", R"(root ::= ("ab" | "c"){2})", {"abab", "cab", "cc"},
       {"ab", "abc d"}},
      {"GroupAlternativeMayBeEmpty", R"(root ::= "a" ( | "b"))", {"a", "ab"}, {"b", "abb"}},
      {"EmptyAlternativeAtTopLevel", R"(root ::= | "x")", {"", "x"}, {"xx"}},
      {"EmptyBodyAtTheEnd", "root ::=", {""}, {"a"}},
      {"RuleNamesWithDashesDigitsUnderscores", R"(root ::= my-rule_2 Upper-3
my-rule_2 ::= "ok"
Upper-3 ::= "!")",
       {"ok!"}, {"ok"}},
      {"ForwardAndRecursiveReferences", R"(root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= [0-9] | list)",
       {"[]", "[1,[2,[]],3]"}, {"[", "[1,]", "[[1]"}},
      {"CommentsAndBlankLines", "# heading\n\nroot ::= a # trailing\n\n  # indented\na ::= \"a\"\n",
       {"a"}, {""}},
      {"BodyContinuesInsideParentheses", R"(root ::= (
  "a" # comment inside
  "b"
  | "c"
) "d")",
       {"abd", "cd"}, {"ad", "abcd"}},
      {"BodyContinuesAfterBar", "root ::= \"a\" |\n    \"b\" |  # comment\n  \"c\"\n",
       {"a", "b", "c"}, {"ab", ""}},
      {"BodyStartsOnTheNextLine", "root ::=\n  \"a\"\n", {"a"}, {""}},
      {"CrLfLineEndings", "root ::= a |\r\n  b\r\na ::= \"a\"\r\nb ::= \"b\"\r\n", {"a", "b"},
       {"ab", "\r"}},
      {"UnreachableRulesAreAllowed", "root ::= \"a\"\nunused ::= \"b\"\n", {"a"}, {"b"}},
  };
}

TEST(GbnfParserTest, GrammarsAcceptAndRejectTheirStrings) {
  for (const GrammarCase& c : GrammarCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Grammar> grammar = ParseGbnf(c.grammar);
    ASSERT_THAT(grammar, IsOk());
    for (const std::string& text : c.accepts) {
      EXPECT_TRUE(GrammarMatches(*grammar, text)) << "should accept: " << text;
    }
    for (const std::string& text : c.rejects) {
      EXPECT_FALSE(GrammarMatches(*grammar, text)) << "should reject: " << text;
    }
  }
}

struct ErrorCase {
  const char* name;
  std::string grammar;
  std::string message;  // a substring of the kInvalidArgument message
};

std::vector<ErrorCase> ErrorCases() {
  return {
      {"UnterminatedLiteral", R"(root ::= "abc)",
       "GBNF line 1, column 10: unterminated string literal: expecting a closing '\"'"},
      {"UnterminatedClass", "root ::= \"a\"\n  [a-z",
       "line 2, column 3: unterminated character class: expecting a closing ']'"},
      {"UnterminatedEscape", R"(root ::= "\)", "line 1, column 11: unterminated escape"},
      {"UnknownEscape", R"(root ::= "\q")",
       "line 1, column 11: unknown escape '\\' followed by 'q': expecting one of"},
      {"ShortHexEscape", R"(root ::= "\x4")",
       "line 1, column 14: expecting 2 hex digits in the escape at line 1, column 11, found '\"'"},
      {"ShortUnicodeEscape", R"(root ::= [\u12g4])", "expecting 4 hex digits"},
      {"SurrogateEscape", R"(root ::= "\uD800")",
       "line 1, column 11: escape '\\uD800' is not a Unicode scalar value"},
      {"EscapePastUnicode", R"(root ::= [\U00110000])",
       "escape '\\U00110000' is not a Unicode scalar value"},
      {"InvalidUtf8", "root ::= \"\xff\"",
       "line 1, column 11: the text is not valid UTF-8 (at byte 10)"},
      {"Overlong", "# \xc0\xaf\nroot ::= \"a\"", "line 1, column 3: the text is not valid UTF-8"},
      {"EncodedSurrogate", "root ::= \"\xed\xa0\x80\"", "the text is not valid UTF-8"},
      {"TruncatedUtf8", "root ::= \"\xe2\x82", "the text is not valid UTF-8"},
      {"UndefinedRule", "root ::= \"a\" item\nitem ::= thing\n",
       "line 2, column 10: rule 'thing' is referenced but never defined"},
      {"UndefinedRuleNamedAtItsFirstReference", "root ::= x y x\n",
       "line 1, column 10: rule 'x' is referenced but never defined"},
      {"MissingRoot", "item ::= \"a\"\n", "GBNF grammar has no rule 'root'"},
      {"EmptyText", "", "GBNF grammar has no rule 'root'"},
      {"RootOnlyReferenced", "item ::= root\n", "rule 'root' is referenced but never defined"},
      {"DuplicateRule", "root ::= a\na ::= \"x\"\na ::= \"y\"\n",
       "line 3, column 1: rule 'a' is defined twice (first at line 2, column 1)"},
      {"RepeatCountPastLimit", R"(root ::= "a"{10001})",
       "line 1, column 14: repetition count 10001 is past the limit max_repeat (10000)"},
      {"RepeatMaxPastLimit", R"(root ::= "a"{1,99999999999999999999999})",
       "repetition count 99999999999999999999999 is past the limit max_repeat (10000)"},
      {"RepeatMaxBelowMin", R"(root ::= "a"{3,2})",
       "line 1, column 16: repetition maximum 2 is below its minimum 3"},
      {"RepeatWithoutCount", R"(root ::= "a"{,2})",
       "line 1, column 14: expecting a repetition count, found ','"},
      {"UnclosedRepeat", R"(root ::= "a"{2 "b")",
       "line 1, column 16: expecting ',' or '}' to end the repetition opened at line 1, "
       "column 13, found '\"'"},
      {"UnclosedOpenEndedRepeat", R"(root ::= "a"{2,)", "expecting '}' to end the repetition"},
      {"RepeatWithoutItem", R"(root ::= * "a")",
       "line 1, column 10: expecting an item before '*' to repeat"},
      {"RepeatAfterBar", R"(root ::= "a" | +)", "expecting an item before '+' to repeat"},
      {"MissingDefinitionSign", R"(root = "a")",
       "line 1, column 6: expecting '::=' after the rule name 'root', found '='"},
      {"MissingRuleName", R"(::= "a")",
       "line 1, column 1: expecting a rule name (letters, digits, '-', '_'), found ':'"},
      {"BarStartingALine", "root ::= \"a\"\n  | \"b\"\n",
       "line 2, column 3: expecting a rule name, found '|'"},
      {"NewlineEndsTheBodyOutsideParentheses", "root ::= \"a\"\n  \"b\"\n",
       "line 2, column 3: expecting a rule name (letters, digits, '-', '_'), found '\"'"},
      {"UnclosedGroup", "root ::= (\"a\"\n",
       "line 2, column 1: expecting ')' to close the group opened at line 1, column 10, found "
       "the end of the text"},
      {"GroupSwallowingTheNextRule", "root ::= (\"a\"\nb ::= \"c\")\n",
       "line 2, column 3: expecting ')' to close the group opened at line 1, column 10"},
      {"UnmatchedParenthesis", R"(root ::= "a"))", "line 1, column 13: unmatched ')'"},
      {"StrayCharacter", R"(root ::= "a" ; "b")",
       "line 1, column 14: expecting a newline or the end of the text after the body of rule "
       "'root', found ';'"},
      {"StrayNonAsciiCharacter", "root ::= \"a\" \xc3\xa9",
       "line 1, column 14: expecting a newline or the end of the text after the body of rule "
       "'root', found U+00E9"},
      {"ColumnsCountCodePoints", "root ::= \"\xc3\xa9\xf0\x9f\x98\x80\" foo\n",
       "line 1, column 15: rule 'foo' is referenced but never defined"},
      {"ReversedRange", R"(root ::= [a-cz-a])",
       "line 1, column 14: reversed range U+007A-U+0061 in a character class"},
      {"EmptyClass", R"(root ::= "a" [])", "line 1, column 14: empty character class '[]'"},
      {"EmptyNegatedClass", R"(root ::= [^])", "empty character class '[^]'"},
      {"TokenId", R"(root ::= <[123]> "a")",
       "line 1, column 10: token references ('<[123]>', '<think>', '!<...>') match token ids, "
       "not text, and are not supported"},
      {"TokenText", R"(root ::= <think> "a" </think>)", "token references"},
      {"NegatedToken", R"(root ::= !<[7]>*)", "token references"},
      {"ParenthesesPastNesting", "root ::= " + std::string(201, '(') + "\"a\"" +
                                     std::string(201, ')'),
       "line 1, column 210: parentheses nest deeper than the limit max_nesting (200)"},
      {"RepetitionsPastNesting", "root ::= \"a\"" + std::string(200, '?'),
       "line 1, column 212: expressions nest deeper than the limit max_nesting (200)"},
      {"TooLong", "root ::= \"" + std::string(kMaxGbnfBytes, 'a') + "\"",
       "GBNF grammar is 1048587 bytes, past the limit of 1048576 bytes (kMaxGbnfBytes, 1 MiB)"},
  };
}

TEST(GbnfParserTest, RefusesBadGrammarsNamingLineColumnAndWhatWasExpected) {
  for (const ErrorCase& c : ErrorCases()) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(ParseGbnf(c.grammar),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

TEST(GbnfParserTest, AcceptsDeepButBoundedNesting) {
  const std::string grammar =
      "root ::= " + std::string(60, '(') + "\"a\"" + std::string(60, ')') + "\n";
  ASSERT_OK_AND_ASSIGN(const Grammar parsed, ParseGbnf(grammar));
  EXPECT_TRUE(GrammarMatches(parsed, "a"));
}

TEST(GbnfParserTest, LimitsComeFromGrammarLimits) {
  GrammarLimits limits;
  limits.max_repeat = 5;
  limits.max_nesting = 4;
  EXPECT_THAT(ParseGbnf(R"(root ::= "a"{5})", limits), IsOk());
  EXPECT_THAT(ParseGbnf(R"(root ::= "a"{6})", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("repetition count 6 is past the limit max_repeat (5)")));
  EXPECT_THAT(ParseGbnf(R"(root ::= (((("a")))))", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parentheses nest deeper than the limit max_nesting (4)")));
}

TEST(GbnfParserTest, LeftRecursionIsRefusedNamingTheRule) {
  EXPECT_THAT(ParseGbnf("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expr")));
}

TEST(GbnfParserTest, AddGbnfRulesSharesRulesWithTheCaller) {
  GrammarBuilder builder;
  absl::flat_hash_map<std::string, int32_t> rules_by_name;
  const int32_t digit = builder.AddRule("digit");
  rules_by_name["digit"] = digit;
  ASSERT_THAT(builder.DefineRule(digit, GrammarExpr::CharClass({{'0', '9'}})), IsOk());
  ASSERT_THAT(AddGbnfRules("root ::= \"n=\" digit+ tail\n", builder, &rules_by_name), IsOk());
  // `tail` is referenced, not defined: the caller defines it.
  ASSERT_TRUE(rules_by_name.contains("tail"));
  ASSERT_THAT(builder.DefineRule(rules_by_name["tail"], GrammarExpr::Literal(";")), IsOk());
  ASSERT_OK_AND_ASSIGN(const Grammar grammar, std::move(builder).Build(rules_by_name["root"]));
  EXPECT_TRUE(GrammarMatches(grammar, "n=42;"));
  EXPECT_FALSE(GrammarMatches(grammar, "n=;"));
}

TEST(GbnfParserTest, AddGbnfRulesRefusesRedefiningACallersRuleNamingIt) {
  GrammarBuilder builder;
  absl::flat_hash_map<std::string, int32_t> rules_by_name;
  const int32_t digit = builder.AddRule("digit");
  rules_by_name["digit"] = digit;
  ASSERT_THAT(builder.DefineRule(digit, GrammarExpr::CharClass({{'0', '9'}})), IsOk());
  EXPECT_THAT(AddGbnfRules("root ::= digit\ndigit ::= \"x\"\n", builder, &rules_by_name),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("GBNF line 2, column 1: rule 'digit': ")));
}

}  // namespace
}  // namespace tandem
