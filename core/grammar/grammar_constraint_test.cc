#include "core/grammar/grammar_constraint.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/grammar_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using E = GrammarExpr;
using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// Every byte as a token, then multi-byte tokens that cross rule boundaries, then the end id.
std::shared_ptr<const ConstraintVocabulary> TestVocabulary() {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{\"", "\":", "\",", "\"}", "\"]", "\":\"", "ab", "abc", "ba", "[[", "]]", "a (", "b (1", " (", "1)", ")\n", ")\n-", "+(", "ab\"", "c\"]]",
                        "],[", "\\n", "\\\"", "\", \"", "true", "tr", "ue}", "1,", ",\"a", "a\"",
                        "\xC3\xA9", "\xC3", "\xA9\"", " ", "  ", "\n"}) {
    bytes.push_back(t);
  }
  bytes.push_back("");  // a control token: never allowed
  bytes.push_back("</s>");
  const int32_t end = static_cast<int32_t>(bytes.size()) - 1;
  return std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromBytes(std::move(bytes), {end}));
}

// value ::= object | array | string | "true" | [0-9]+
Grammar JsonLikeGrammar() {
  GrammarBuilder b;
  const int32_t value = b.AddRule("value");
  const int32_t string = b.AddRule("string");
  E chr = E::Choice({E::CharClass({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true),
                     E::Sequence({E::Literal("\\"), E::CharClass({{'"', '"'}, {'\\', '\\'}, {'n', 'n'}})})});
  EXPECT_THAT(b.DefineRule(string, E::Sequence({E::Literal("\""), E::Repeat(chr, 0, kUnbounded), E::Literal("\"")})),
              IsOk());
  E member = E::Sequence({E::Rule(string), E::Literal(":"), E::Rule(value)});
  E object = E::Sequence({E::Literal("{"),
                          E::Optional(E::Sequence({member, E::Repeat(E::Sequence({E::Literal(","), member}), 0, kUnbounded)})),
                          E::Literal("}")});
  E array = E::Sequence({E::Literal("["),
                         E::Optional(E::Sequence({E::Rule(value), E::Repeat(E::Sequence({E::Literal(","), E::Rule(value)}), 0, kUnbounded)})),
                         E::Literal("]")});
  EXPECT_THAT(b.DefineRule(value, E::Choice({object, array, E::Rule(string), E::Literal("true"),
                                             E::Repeat(E::CharClass({{'0', '9'}}), 1, kUnbounded)})),
              IsOk());
  absl::StatusOr<Grammar> g = std::move(b).Build(value);
  EXPECT_THAT(g, IsOk());
  return *std::move(g);
}

// The tokens allowed after `text`, by brute force: a token is allowed iff text + its bytes is a
// prefix the grammar can continue (or, for the end id, iff text is a sentence).
std::vector<int32_t> NaiveAllowed(const Grammar& grammar, const ConstraintVocabulary& vocab,
                                  const std::string& text) {
  std::vector<int32_t> allowed;
  GrammarMatcher m(grammar);
  MatcherState base = m.Start();
  for (char c : text) EXPECT_TRUE(m.Advance(base, static_cast<uint8_t>(c), &base));
  for (size_t id = 0; id < vocab.token_bytes.size(); ++id) {
    const int32_t t = static_cast<int32_t>(id);
    if (std::find(vocab.end_ids.begin(), vocab.end_ids.end(), t) != vocab.end_ids.end()) {
      if (m.CanEnd(base)) allowed.push_back(t);
      continue;
    }
    if (vocab.token_bytes[id].empty()) continue;
    MatcherState s = base;
    bool ok = true;
    for (char c : vocab.token_bytes[id]) ok = ok && m.Advance(s, static_cast<uint8_t>(c), &s);
    if (ok) allowed.push_back(t);
  }
  return allowed;
}

std::vector<int32_t> MaskIds(const TokenMask& mask, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int32_t t = 0; t < vocab; ++t) {
    if (mask.Allowed(t)) ids.push_back(t);
  }
  return ids;
}

// Grammars whose rules end in many ways: tail calls, nullable endings, nesting, repetitions.
std::vector<Grammar> WalkGrammars() {
  std::vector<Grammar> grammars = {JsonLikeGrammar()};
  for (const char* gbnf : {
           "root ::= item (\"\\n\" item)*\nitem ::= \"- \" [A-Za-z ,.']+ \" (\" [0-9]+ \")\"",
           "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\n"
           "term ::= [0-9]+ | \"(\" expr \")\"",
           "root ::= (\"a\" | \"ab\" | \"abc\")* \"\\\"\" x?\nx ::= \"]]\" | \"],[\" x",
           "root ::= w (\" \" w)* \"\\n\"?\nw ::= [a-c]{1,3} | \"tr\" \"ue\"?",
           // Bounded repetitions (repeat_chains.h): items that are rules with alternatives
           // and inner frames, nested, nullable, at their bound.
           "root ::= \"\\\"\" c{0,6} \"\\\"\" (\"]]\" | \",\"){0,2}\n"
           "c ::= [a-c] | \"\\\\\" [\"n]",
           "root ::= [a-c]{0,4} \"\\\"\" | \"(\" w{1,5} \")\"\nw ::= \"ab\" | \"a\" | [0-9]",
           "root ::= (\"[\" [a-b]{0,3} \"]\"){0,3}",
           "root ::= (x \",\"){0,4} \"\\n\"\nx ::= \"a\" y?\ny ::= \"b\"",
           "root ::= ([ab]{0,2} \" \"){1,3} (\"tr\" | \"ue\"?){0,3}",
       }) {
    absl::StatusOr<Grammar> g = ParseGbnf(gbnf);
    EXPECT_THAT(g, IsOk()) << gbnf;
    if (g.ok()) grammars.push_back(*std::move(g));
  }
  return grammars;
}

TEST(GrammarConstraintTest, MaskEqualsBruteForceAlongRandomWalks) {
  auto vocab = TestVocabulary();
  std::mt19937 rng(7);
  for (const Grammar& grammar : WalkGrammars()) {
    ASSERT_OK_AND_ASSIGN(auto compiled, CompileGrammarConstraint(grammar, vocab));
    for (int walk = 0; walk < 30; ++walk) {
      auto constraint = NewTokenConstraint(compiled);
      std::vector<int32_t> tokens;
      std::string text;
      for (int step = 0; step < 40; ++step) {
        TokenMask mask;
        constraint->FillMask(&mask);
        const std::vector<int32_t> got = MaskIds(mask, constraint->vocab_size());
        ASSERT_EQ(got, NaiveAllowed(grammar, *vocab, text))
            << grammar.DebugString() << "walk " << walk << " after '" << text << "'";
        if (got.empty()) break;
        const int32_t next = got[rng() % got.size()];
        if (next == vocab->end_ids[0]) break;
        tokens.push_back(next);
        text += vocab->token_bytes[next];
        ASSERT_THAT(constraint->Sync(tokens), IsOk());
      }
    }
  }
}

TEST(GrammarConstraintTest, SyncRollsBackAndRefusesNamingTheToken) {
  auto vocab = TestVocabulary();
  ASSERT_OK_AND_ASSIGN(auto compiled, CompileGrammarConstraint(JsonLikeGrammar(), vocab));
  auto constraint = NewTokenConstraint(compiled);
  const int32_t brace = '{', quote_colon = 256 + 1;  // "{", "\":"
  ASSERT_THAT(constraint->Sync({brace, '"', 'a', quote_colon}), IsOk());
  TokenMask after_colon;
  constraint->FillMask(&after_colon);
  EXPECT_TRUE(after_colon.Allowed('['));
  EXPECT_FALSE(after_colon.Allowed('}'));
  ASSERT_THAT(constraint->Sync({brace}), IsOk());  // back to "{"
  TokenMask after_brace;
  constraint->FillMask(&after_brace);
  EXPECT_TRUE(after_brace.Allowed('}'));
  EXPECT_TRUE(after_brace.Allowed('"'));
  EXPECT_FALSE(after_brace.Allowed('['));
  EXPECT_THAT(constraint->Sync({brace, '['}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("token 91 at output index 1 is not allowed")));
  TokenMask again;
  constraint->FillMask(&again);  // the state holds "{"
  EXPECT_EQ(again.words, after_brace.words);
}

TEST(GrammarConstraintTest, EndTokenOnlyWhereTheGrammarMayEnd) {
  auto vocab = TestVocabulary();
  const int32_t end = vocab->end_ids[0];
  ASSERT_OK_AND_ASSIGN(auto compiled, CompileGrammarConstraint(JsonLikeGrammar(), vocab));
  auto constraint = NewTokenConstraint(compiled);
  TokenMask mask;
  ASSERT_THAT(constraint->Sync({'1'}), IsOk());
  constraint->FillMask(&mask);
  EXPECT_TRUE(mask.Allowed(end));  // "1" is a value; more digits may follow
  EXPECT_TRUE(mask.Allowed('2'));
  ASSERT_THAT(constraint->Sync({'['}), IsOk());
  constraint->FillMask(&mask);
  EXPECT_FALSE(mask.Allowed(end));
  ASSERT_THAT(constraint->Sync({'[', ']'}), IsOk());
  constraint->FillMask(&mask);
  EXPECT_EQ(mask.Count(), 1);  // "[]" is complete: only the end is left
  EXPECT_TRUE(mask.Allowed(end));
  ASSERT_THAT(constraint->Sync({'[', ']', end}), IsOk());
  constraint->FillMask(&mask);
  EXPECT_EQ(MaskIds(mask, constraint->vocab_size()), std::vector<int32_t>{end});
}

}  // namespace
}  // namespace tandem
