// Seeds for the GBNF fuzzer: small grammars over every construct of the format, each followed
// by kGbnfTextSeparator and a text to match. The seeder (make_gbnf_seeds) writes them as
// libFuzzer's starting corpus; the replay test runs them and hostile variants of them.
#ifndef TANDEM_CORE_GRAMMAR_FUZZ_GBNF_SEEDS_H_
#define TANDEM_CORE_GRAMMAR_FUZZ_GBNF_SEEDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::fuzzing {

// Splits a fuzz input into the grammar (before) and the text to match (after).
inline constexpr absl::string_view kGbnfTextSeparator = "\n#--text--\n";

inline std::vector<std::string> GbnfSeeds() {
  const std::string sep(kGbnfTextSeparator);
  return {
      "root ::= ws expr\n"
      "expr ::= term ((\"+\" | \"-\") ws term)*\n"
      "term ::= factor ((\"*\" | \"/\") ws factor)*\n"
      "factor ::= \"-\"? [0-9]+ ws | \"(\" ws expr \")\" ws\n"
      "ws ::= [ \\t\\n]*\n" +
          sep + "(1 + 2) * -3",
      "root ::= object\n"
      "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
      "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" "
      "ws\n"
      "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
      "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" "
      "[0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
      "number ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]+)? ([eE] [-+]? [0-9]{1,15})? "
      "ws\n"
      "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n" +
          sep + "{\"a\": [1, true, \"x\\u00e9\"], \"b\": {}}",
      "root ::= (\"- \" item)+\nitem ::= [^\\n]+ \"\\n\"\n" + sep + "- a\n- b\n",
      "root ::= (\n  \"1. \" move \" \" move \"\\n\"\n  ([1-9] [0-9]? \". \" move \" \" move "
      "\"\\n\")+\n)\nmove ::= (pawn | nonpawn | castle) [+#]?\n"
      "pawn ::= ([a-h] \"x\")? [a-h] [1-8] (\"=\" [NBRQ])?\n"
      "nonpawn ::= [NBKQR] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\ncastle ::= \"O-O\" \"-O\"?\n" +
          sep + "1. e4 e5\n2. Nf3 Nc6\n",
      "root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\r\\\\\\\"\\[\\]\\-\" [^a-z\\]] . \"h\xc3\xa9\"\n" +
          sep + "A\xc3\xa9\xf0\x9f\x98\x80\n\t\r\\\"[]-Z\xf0\x9f\x98\x80h\xc3\xa9",
      "root ::= \"a\"{2} \"b\"{1,} \"c\"{0,2} (\"d\" | e){ 1 , 3 } \"x\"{2}{3} \"z\"{0}\n"
      "e ::= [\xce\xb1-\xcf\x89]?\n" +
          sep + "aabbbcd\xce\xb2xxxxxx",
      "# comment\nroot ::= a |\r\n  ( # inside\n  b c )\r\na ::= \"a\"*\nb ::= \"b\" | \"\"\nc ::= "
      "[-x-]+\n" +
          sep + "b-x-",
      "root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= [0-9] | list\n" + sep +
          "[1,[2,[]],3]",
      "root ::= (\"a\" | \"a\" | \"a\"*)* (\"a\"*)+\n" + sep + std::string(64, 'a'),
      "root ::= <[123]> !<think>\n" + sep + "x",
      "root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n" + sep + "1+1",
  };
}

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_GRAMMAR_FUZZ_GBNF_SEEDS_H_
