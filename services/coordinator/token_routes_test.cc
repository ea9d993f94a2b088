#include "services/coordinator/token_routes.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/detokenize.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TokenRoutesTest, TokenizeBodyReadsLlamaServersFields) {
  ASSERT_OK_AND_ASSIGN(TokenizeBody b, ParseTokenizeBody(R"({"content": "hi"})"));
  EXPECT_EQ(b.request.text(), "hi");
  EXPECT_FALSE(b.request.add_special());
  EXPECT_TRUE(b.request.parse_special());
  EXPECT_FALSE(b.with_pieces);
  ASSERT_OK_AND_ASSIGN(
      b, ParseTokenizeBody(
             R"({"content": "", "add_special": true, "parse_special": false, "with_pieces": true})"));
  EXPECT_TRUE(b.request.add_special());
  EXPECT_FALSE(b.request.parse_special());
  EXPECT_TRUE(b.with_pieces);
}

struct Refused {
  const char* body;
  const char* param;
};

TEST(TokenRoutesTest, BadTokenizeBodiesNameTheirField) {
  const Refused kCases[] = {
      {R"({})", "content"},
      {R"({"content": 5})", "content"},
      {R"({"content": "x", "add_special": "yes"})", "add_special"},
      {R"({"content": "x", "with_pieces": 1})", "with_pieces"},
      {R"({"content": "x", "extra": 1})", "extra"},
  };
  for (const Refused& c : kCases) {
    const absl::StatusOr<TokenizeBody> b = ParseTokenizeBody(c.body);
    EXPECT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument)) << c.body;
    EXPECT_EQ(openai::ErrorParam(b.status()).value_or("(none)"), c.param) << c.body;
  }
  EXPECT_THAT(ParseTokenizeBody("[1]"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseTokenizeBody("{"), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("not JSON")));
}

TEST(TokenRoutesTest, TokenizeReplyWithPiecesGivesTextOrBytes) {
  const std::vector<std::string> vocab = {"a", " b", "\xe2\x96", "\x81"};
  v1::TokenizeResponse ids;
  for (int id : {0, 1, 2}) ids.add_token_ids(id);
  EXPECT_EQ(TokenizeReply(ids, false, vocab), R"({"tokens": [0, 1, 2]})");
  EXPECT_EQ(TokenizeReply(ids, true, vocab),
            R"({"tokens": [{"id": 0, "piece": "a"}, {"id": 1, "piece": " b"}, )"
            R"({"id": 2, "piece": [226, 150]}]})");
}

TEST(TokenRoutesTest, DetokenizeBodyIsBoundedAndInTheVocabulary) {
  ASSERT_OK_AND_ASSIGN(v1::DetokenizeRequest r,
                       ParseDetokenizeBody(R"({"tokens": [0, 3, 1]})", 4, 8));
  EXPECT_THAT(r.token_ids(), ElementsAre(0, 3, 1));
  const Refused kCases[] = {
      {R"({})", "tokens"},
      {R"({"tokens": "0 1"})", "tokens"},
      {R"({"tokens": [0, 4]})", "tokens[1]"},
      {R"({"tokens": [-1]})", "tokens[0]"},
      {R"({"tokens": [0.5]})", "tokens[0]"},
      {R"({"tokens": [0,0,0,0,0,0,0,0,0]})", "tokens"},
      {R"({"tokens": [], "content": "x"})", "content"},
  };
  for (const Refused& c : kCases) {
    const absl::StatusOr<v1::DetokenizeRequest> b = ParseDetokenizeBody(c.body, 4, 8);
    EXPECT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument)) << c.body;
    EXPECT_EQ(openai::ErrorParam(b.status()).value_or("(none)"), c.param) << c.body;
  }
}

TEST(DetokenizeTest, JoinsCharactersSplitOverIdsAndRepairsTheRest) {
  const std::vector<std::string> vocab = {"a", " b", "\xe2\x96", "\x81", "\xff"};
  v1::DetokenizeRequest r;
  for (int id : {0, 1, 2, 3}) r.add_token_ids(id);
  ASSERT_OK_AND_ASSIGN(v1::DetokenizeResponse text, Detokenize(r, vocab, 16));
  EXPECT_EQ(text.text(), "a b\xe2\x96\x81");
  r.clear_token_ids();
  for (int id : {4, 2}) r.add_token_ids(id);
  ASSERT_OK_AND_ASSIGN(text, Detokenize(r, vocab, 16));
  EXPECT_EQ(text.text(), "\xef\xbf\xbd\xef\xbf\xbd");  // two U+FFFD
  EXPECT_EQ(DetokenizeReply(text), "{\"content\": \"\xef\xbf\xbd\xef\xbf\xbd\"}");
}

TEST(DetokenizeTest, RefusesIdsOutsideTheVocabularyAndTooMany) {
  const std::vector<std::string> vocab = {"a", "b"};
  v1::DetokenizeRequest r;
  r.add_token_ids(0);
  r.add_token_ids(2);
  EXPECT_THAT(Detokenize(r, vocab, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token_ids[1] = 2")));
  r.set_token_ids(1, 1);
  EXPECT_THAT(Detokenize(r, vocab, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 1")));
}

}  // namespace
}  // namespace tandem
