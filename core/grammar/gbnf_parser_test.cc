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
const char kArithmetic[] = R"g(# integer arithmetic with + - * / and parentheses
root   ::= ws expr
expr   ::= term (("+" | "-") ws term)*
term   ::= factor (("*" | "/") ws factor)*
factor ::= number ws | "(" ws expr ")" ws
number ::= "-"? [0-9]+
ws     ::= [ \t\n]*
)g";

const char kJson[] = R"g(root   ::= object
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
)g";

const char kList[] = R"g(root ::= ("- " item)+
item ::= [^\n]+ "\n"
)g";

const char kChess[] = R"g(# a game of numbered move pairs
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
)g";

std::vector<GrammarCase> GrammarCases() {
  return {
      {"Arithmetic",
       kArithmetic,
       {"1", "1+2*3", " (1 + 2) * -3\n", "((4))/2-1"},
       {"", "1+", "(1", "1 2", "1++2", "a"}},
      {"Json",
       kJson,
       {"{}", R"g({"a": 1, "b": [true, null, "x\u00e9"], "c": {"d": -0.5e10}})g",
        "{\n  \"k\": \"v\"\n}", "{\"\xc3\xa9\": []}"},
       {"[1]", R"g({"a" 1})g", R"g({"a": 01})g",
        R"g({"a": "line)g"
        "\n"
        R"g("})g",
        "{", R"g({"a": tru})g"}},
      {"List",
       kList,
       {"- apples\n", "- apples\n- pears\n"},
       {"", "- apples", "* apples\n", "- \n"}},
      {"Chess",
       kChess,
       {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n10. O-O-O Qxd8#\n",
        "1. e4 e5\n2. e8=Q+ Ke7\n"},
       {"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n0x. a3 a6\n", "1. e4  e5\n2. a3 a6\n"}},
      // Literals and their escapes name code points; \xe9 is U+00E9, two bytes in UTF-8.
      {"LiteralEscapes",
       R"g(root ::= "\x41\u00e9\U0001F600\n\t\r\\\"\[\]\-")g",
       {"A\xc3\xa9\xf0\x9f\x98\x80\n\t\r\\\"[]-"},
       {"A\xe9\xf0\x9f\x98\x80\n\t\r\\\"[]-", ""}},
      {"HexEscapeIsACodePoint", R"g(root ::= "\xe9")g", {"\xc3\xa9"}, {"\xe9", "e"}},
      {"RawUtf8Literal",
       "root ::= \"h\xc3\xa9llo \xf0\x9f\x98\x80\"",
       {"h\xc3\xa9llo \xf0\x9f\x98\x80"},
       {"hello ", "h\xc3\xa9llo"}},
      {"EmptyLiteral", R"g(root ::= "" "a" "")g", {"a"}, {"", "aa"}},
      {"Class", R"g(root ::= [a-cx\-\]]+)g", {"a", "abc-]x", "cc"}, {"", "d", "[", "A"}},
      {"DashFirstAndLastInClass", R"g(root ::= [-a] [b-])g", {"-b", "a-", "ab"}, {"bb", "--a"}},
      {"UnescapedBracketInClass", R"g(root ::= [[(])g", {"[", "("}, {"]", ")"}},
      {"NegatedClass",
       R"g(root ::= [^a-z\n])g",
       {"A", "\xc3\xa9", "\xf0\x9f\x98\x80", " "},
       {"a", "z", "\n", "", "AB"}},
      {"ClassOfCodePoints",
       "root ::= [\xce\xb1-\xcf\x89\\u4e00-\\u9fff]+",
       {"\xce\xb1\xce\xb2", "\xe4\xb8\x80\xcf\x89"},
       {"a", "\xce\x91"}},
      {"AnyChar",
       R"g(root ::= . .)g",
       {"ab", "\xc3\xa9\xf0\x9f\x98\x80", "\n\n"},
       {"a", "abc", "", "\xc3"}},
      {"Star", R"g(root ::= "ab"*)g", {"", "ab", "ababab"}, {"a", "aba", "ba"}},
      {"Plus", R"g(root ::= "a"+ "b")g", {"ab", "aaab"}, {"b", "a"}},
      {"Optional", R"g(root ::= "a"? "b")g", {"b", "ab"}, {"aab", "a"}},
      {"Exactly", R"g(root ::= [0-9]{3})g", {"123"}, {"12", "1234", ""}},
      {"AtLeast", R"g(root ::= "a"{2,})g", {"aa", "aaaaaa"}, {"", "a"}},
      {"Between",
       R"g(root ::= "a"{1,3} "b"{0,2})g",
       {"a", "aaa", "abb", "aaab"},
       {"", "aaaa", "abbb", "b"}},
      {"SpacesInsideBraces", R"g(root ::= "a"{ 1 , 2 })g", {"a", "aa"}, {"", "aaa"}},
      {"ZeroRepetitionsIsEmpty",
       R"g(root ::= "a" ("b" x){0}
x ::= "x")g",
       {"a"},
       {"ab", "abx"}},
      {"StackedRepetitionsMultiply", R"g(root ::= "x"{2}{3})g", {"xxxxxx"}, {"xx", "xxx", ""}},
      {"RepetitionOfAGroup",
       R"g(root ::= ("ab" | "c"){2})g",
       {"abab", "cab", "cc"},
       {"ab", "abc d"}},
      {"GroupAlternativeMayBeEmpty", R"g(root ::= "a" ( | "b"))g", {"a", "ab"}, {"b", "abb"}},
      {"EmptyAlternativeAtTopLevel", R"g(root ::= | "x")g", {"", "x"}, {"xx"}},
      {"EmptyBodyAtTheEnd", "root ::=", {""}, {"a"}},
      {"RuleNamesWithDashesDigitsUnderscores",
       R"g(root ::= my-rule_2 Upper-3
my-rule_2 ::= "ok"
Upper-3 ::= "!")g",
       {"ok!"},
       {"ok"}},
      {"ForwardAndRecursiveReferences",
       R"g(root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= [0-9] | list)g",
       {"[]", "[1,[2,[]],3]"},
       {"[", "[1,]", "[[1]"}},
      {"CommentsAndBlankLines",
       "# heading\n\nroot ::= a # trailing\n\n  # indented\na ::= \"a\"\n",
       {"a"},
       {""}},
      {"BodyContinuesInsideParentheses",
       R"g(root ::= (
  "a" # comment inside
  "b"
  | "c"
) "d")g",
       {"abd", "cd"},
       {"ad", "abcd"}},
      {"BodyContinuesAfterBar",
       "root ::= \"a\" |\n    \"b\" |  # comment\n  \"c\"\n",
       {"a", "b", "c"},
       {"ab", ""}},
      {"BodyStartsOnTheNextLine", "root ::=\n  \"a\"\n", {"a"}, {""}},
      {"CrLfLineEndings",
       "root ::= a |\r\n  b\r\na ::= \"a\"\r\nb ::= \"b\"\r\n",
       {"a", "b"},
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
      {"UnterminatedLiteral", R"g(root ::= "abc)g",
       "GBNF line 1, column 10: unterminated string literal: expecting a closing '\"'"},
      {"UnterminatedClass", "root ::= (\"a\"\n  [a-z",
       "line 2, column 3: unterminated character class: expecting a closing ']'"},
      {"UnterminatedEscape", R"g(root ::= "\)g", "line 1, column 11: unterminated escape"},
      {"UnknownEscape", R"g(root ::= "\q")g",
       "line 1, column 11: unknown escape '\\' followed by 'q': expecting one of"},
      {"ShortHexEscape", R"g(root ::= "\x4")g",
       "line 1, column 14: expecting 2 hex digits in the escape at line 1, column 11, found '\"'"},
      {"ShortUnicodeEscape", R"g(root ::= [\u12g4])g", "expecting 4 hex digits"},
      {"SurrogateEscape", R"g(root ::= "\uD800")g",
       "line 1, column 11: escape '\\uD800' is not a Unicode scalar value"},
      {"EscapePastUnicode", R"g(root ::= [\U00110000])g",
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
      {"RepeatCountPastLimit", R"g(root ::= "a"{10001})g",
       "line 1, column 14: repetition count 10001 is past the limit max_repeat (10000)"},
      {"RepeatMaxPastLimit", R"g(root ::= "a"{1,99999999999999999999999})g",
       "repetition count 99999999999999999999999 is past the limit max_repeat (10000)"},
      {"RepeatMaxBelowMin", R"g(root ::= "a"{3,2})g",
       "line 1, column 16: repetition maximum 2 is below its minimum 3"},
      {"RepeatWithoutCount", R"g(root ::= "a"{,2})g",
       "line 1, column 14: expecting a repetition count, found ','"},
      {"UnclosedRepeat", R"g(root ::= "a"{2 "b")g",
       "line 1, column 16: expecting ',' or '}' to end the repetition opened at line 1, "
       "column 13, found '\"'"},
      {"UnclosedOpenEndedRepeat", R"g(root ::= "a"{2,)g", "expecting '}' to end the repetition"},
      {"RepeatWithoutItem", R"g(root ::= * "a")g",
       "line 1, column 10: expecting an item before '*' to repeat"},
      {"RepeatAfterBar", R"g(root ::= "a" | +)g", "expecting an item before '+' to repeat"},
      {"MissingDefinitionSign", R"g(root = "a")g",
       "line 1, column 6: expecting '::=' after the rule name 'root', found '='"},
      {"MissingRuleName", R"g(::= "a")g",
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
      {"UnmatchedParenthesis", R"g(root ::= "a"))g", "line 1, column 13: unmatched ')'"},
      {"StrayCharacter", R"g(root ::= "a" ; "b")g",
       "line 1, column 14: expecting a newline or the end of the text after the body of rule "
       "'root', found ';'"},
      {"StrayNonAsciiCharacter", "root ::= \"a\" \xc3\xa9",
       "line 1, column 14: expecting a newline or the end of the text after the body of rule "
       "'root', found U+00E9"},
      {"ColumnsCountCodePoints", "root ::= \"\xc3\xa9\xf0\x9f\x98\x80\" foo\n",
       "line 1, column 15: rule 'foo' is referenced but never defined"},
      {"ReversedRange", R"g(root ::= [a-cz-a])g",
       "line 1, column 14: reversed range U+007A-U+0061 in a character class"},
      {"EmptyClass", R"g(root ::= "a" [])g", "line 1, column 14: empty character class '[]'"},
      {"EmptyNegatedClass", R"g(root ::= [^])g", "empty character class '[^]'"},
      {"TokenId", R"g(root ::= <[123]> "a")g",
       "line 1, column 10: token references ('<[123]>', '<think>', '!<...>') match token ids, "
       "not text, and are not supported"},
      {"TokenText", R"g(root ::= <think> "a" </think>)g", "token references"},
      {"NegatedToken", R"g(root ::= !<[7]>*)g", "token references"},
      {"ParenthesesPastNesting",
       "root ::= " + std::string(201, '(') + "\"a\"" + std::string(201, ')'),
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
  EXPECT_THAT(ParseGbnf(R"g(root ::= "a"{5})g", limits), IsOk());
  EXPECT_THAT(ParseGbnf(R"g(root ::= (((("a"))))+)g", limits), IsOk());
  EXPECT_THAT(ParseGbnf(R"g(root ::= "a"{6})g", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("repetition count 6 is past the limit max_repeat (5)")));
  EXPECT_THAT(ParseGbnf(R"g(root ::= ((((("a"))))))g", limits),
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
