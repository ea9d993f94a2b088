// Seed inputs for regex_fuzzer: patterns covering every supported construct and refusal, each
// optionally followed by kRegexTextSeparator and a text to match. Used by the seeder
// (make_regex_seeds) and the replay test.
#ifndef TANDEM_CORE_GRAMMAR_FUZZ_REGEX_SEEDS_H_
#define TANDEM_CORE_GRAMMAR_FUZZ_REGEX_SEEDS_H_

namespace tandem::fuzzing {

inline constexpr char kRegexTextSeparator[] = "\n#--text--\n";

inline constexpr const char* kRegexSeeds[] = {
    "abc\n#--text--\nabc",
    // More NFA states than the matcher keeps: the matcher gives up (found by the fuzzer).
    "(((a{0,6}){23}){40})\n#--text--\naaaaaaaaaaaaaaaaaaaab",
    "^\\d{4}-\\d{2}-\\d{2}$\n#--text--\n2024-07-26",
    "[A-Z]{3}-\\d+\n#--text--\nABC-42",
    "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$\n#--text--\nme@example.com",
    "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    "(a*)*b\n#--text--\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "(a|a)*\n#--text--\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "(a|aa)+$\n#--text--\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "(?:ab|cd)+?x{2,5}?y??\n#--text--\nabcdxxx",
    "(?<year>\\d{4})-(?<m>\\d\\d)\n#--text--\n2024-07",
    ".\\s\\S\\w\\W\\d\\D\n#--text--\n\xC3\xA9 x_-5a",
    "[^\\x00-\\x1F\"\\\\]*\n#--text--\nplain \xE2\x9C\x93",
    "[\\u00C0-\\u00FF\\uD83D\\uDE00-\\uD83D\\uDE4F\\u{1F900}-\\u{1F9FF}a-]+",
    "\\n\\r\\t\\f\\v\\0\\cJ\\x41\\u00e9\\u{10FFFF}\\.\\*\\[\\]\\{\\}\\(\\)\\|\\^\\$\\/\\-",
    "[\\b\\]\\[.*+?(){}|^$]\n#--text--\n]",
    "^a|^b$|c$|\n#--text--\nb",
    "(((a{2,3}){2}){2})\n#--text--\naaaaaaaaaaaa",
    "(a?b?c?d?e?f?)*\n#--text--\nabcfed",
    "[^]*\xE6\x97\xA5\xE6\x9C\xAC[]?",
    "(a)\\1",
    "\\k<x>",
    "(?=a)",
    "(?<!a)",
    "\\bx\\B",
    "(?i)a",
    "\\p{L}",
    "a^",
    "$a",
    "a**",
    "a{3,2}",
    "a{99999}",
    "(a{1000}){1000}",
    "((((((((((a))))))))))",
    "[z-a]",
    "\\uD800",
    "\\u{110000}",
    "\\012",
    "\\c",
    "a\\",
    "(?<1>a)",
    "a\xFF",
    "[\\d-z]",
    "a{",
    "}",
    "]",
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_GRAMMAR_FUZZ_REGEX_SEEDS_H_
