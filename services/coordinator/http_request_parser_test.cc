#include "services/coordinator/http_request_parser.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

HttpLimits SmallLimits() {
  HttpLimits limits;
  limits.max_header_bytes = 256;
  limits.max_header_count = 4;
  limits.max_body_bytes = 16;
  return limits;
}

// Feeds `bytes` as if they arrived `step` at a time, reading on past the head as a caller
// does once it has checked it; the number of bytes consumed.
size_t FeedAll(HttpRequestParser& parser, const std::string& bytes, size_t step) {
  size_t used = 0, arrived = 0;
  while (!parser.done() && !parser.failed()) {
    const size_t n = parser.Feed(absl::string_view(bytes).substr(used, arrived - used));
    used += n;
    if (n == 0) {
      if (arrived >= bytes.size()) break;
      arrived = std::min(bytes.size(), arrived + step);
    }
  }
  return used;
}

struct Case {
  const char* name;
  std::string bytes;
  int status;  // 0: a complete request
};

class ParserCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParserCaseTest, EndsWithItsStatusWhateverThePieces) {
  for (size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
    HttpRequestParser parser(SmallLimits());
    FeedAll(parser, GetParam().bytes, step);
    if (GetParam().status == 0) {
      EXPECT_TRUE(parser.done()) << GetParam().name << " step " << step << ": " << parser.error();
    } else {
      ASSERT_TRUE(parser.failed()) << GetParam().name << " step " << step;
      EXPECT_EQ(parser.error_status(), GetParam().status)
          << GetParam().name << ": " << parser.error();
    }
  }
}

const std::string kPost = "POST /v1/completions HTTP/1.1\r\nHost: h\r\n";

INSTANTIATE_TEST_SUITE_P(
    Shapes, ParserCaseTest,
    ::testing::Values(
        Case{"get", "GET /health HTTP/1.1\r\nHost: h\r\n\r\n", 0},
        Case{"http10", "GET /health HTTP/1.0\r\n\r\n", 0},
        Case{"leading_empty_line", "\r\nGET /health HTTP/1.1\r\n\r\n", 0},
        Case{"content_length", kPost + "Content-Length: 5\r\n\r\nhello", 0},
        Case{"chunked",
             kPost + "Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n", 0},
        Case{"chunked_at_the_limit",
             kPost + "Transfer-Encoding: chunked\r\n\r\n10\r\n" + std::string(16, 'a') +
                 "\r\n0\r\n\r\n",
             0},
        Case{"two_equal_content_lengths",
             kPost + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400},
        Case{"two_content_lengths", kPost + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
             400},
        Case{"content_length_list", kPost + "Content-Length: 5, 5\r\n\r\nhello", 400},
        Case{"content_length_signed", kPost + "Content-Length: +5\r\n\r\nhello", 400},
        Case{"content_length_and_chunked",
             kPost + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        Case{"chunked_and_content_length",
             kPost + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400},
        Case{"two_transfer_encodings",
             kPost + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
             400},
        Case{"gzip_chunked", kPost + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400},
        Case{"chunked_http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
             400},
        Case{"no_colon", "GET /health HTTP/1.1\r\nHost h\r\n\r\n", 400},
        Case{"space_before_colon", "GET /health HTTP/1.1\r\nHost : h\r\n\r\n", 400},
        Case{"folded_line", "GET /health HTTP/1.1\r\nHost: h\r\n x\r\n\r\n", 400},
        Case{"nul_in_value", std::string("GET /health HTTP/1.1\r\nHost: a\0b\r\n\r\n", 36), 400},
        Case{"bare_cr", "GET /health HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
        Case{"bare_lf", "GET /health HTTP/1.1\nHost: a\r\n\r\n", 400},
        Case{"control_in_value", "GET /health HTTP/1.1\r\nHost: a\x01\r\n\r\n", 400},
        Case{"two_hosts", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        Case{"no_version", "GET /health\r\n\r\n", 400},
        Case{"two_spaces", "GET  /health HTTP/1.1\r\n\r\n", 400},
        Case{"absolute_form", "GET http://x/health HTTP/1.1\r\n\r\n", 400},
        Case{"bad_escape", "GET /v1/models/%zz HTTP/1.1\r\n\r\n", 400},
        Case{"http2", "GET /health HTTP/2.0\r\n\r\n", 505},
        Case{"bad_chunk_size", kPost + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        Case{"chunk_longer_than_its_size",
             kPost + "Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400},
        Case{"chunked_past_the_limit",
             kPost + "Transfer-Encoding: chunked\r\n\r\n10\r\n" + std::string(16, 'a') +
                 "\r\n1\r\na\r\n0\r\n\r\n",
             413},
        Case{"huge_chunk_size", kPost + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
             413},
        Case{"content_length_past_the_limit", kPost + "Content-Length: 17\r\n\r\n", 413},
        Case{"content_length_of_30_digits",
             kPost + "Content-Length: " + std::string(30, '9') + "\r\n\r\n", 413},
        Case{"too_many_headers", "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n",
             431},
        Case{"head_too_long", "GET / HTTP/1.1\r\nA: " + std::string(300, 'a') + "\r\n\r\n", 431},
        Case{"request_line_too_long", "GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n", 414},
        Case{"trailers_count",
             kPost + "Transfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(HttpRequestParserTest, StopsAfterTheHeadSoTheCallerCanRefuseBeforeTheBody) {
  HttpRequestParser parser(SmallLimits());
  const std::string bytes = kPost + "Content-Length: 100\r\n\r\n";
  EXPECT_EQ(parser.Feed(bytes), bytes.size());
  EXPECT_TRUE(parser.head_complete());
  EXPECT_FALSE(parser.failed());  // 413 only once the caller reads on
  EXPECT_EQ(parser.request().content_length, 100);
  EXPECT_EQ(parser.Feed(""), 0u);
  EXPECT_EQ(parser.error_status(), 413);
}

TEST(HttpRequestParserTest, ReadsTheRequestAndLeavesThePipelinedNext) {
  HttpRequestParser parser(HttpLimits{});
  const std::string first =
      "POST /v1/models/a%2Fb?x=1 HTTP/1.1\r\nHost: h\r\nX-Key:  v \r\nConnection: close\r\n"
      "Expect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
  const std::string bytes = first + "GET / HTTP/1.1\r\n\r\n";
  size_t used = parser.Feed(bytes);
  ASSERT_TRUE(parser.head_complete());
  used += parser.Feed(absl::string_view(bytes).substr(used));
  ASSERT_TRUE(parser.done());
  EXPECT_EQ(used, first.size());
  const HttpRequest& r = parser.request();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/models/a%2Fb?x=1");
  EXPECT_EQ(r.path, "/v1/models/a/b");
  EXPECT_EQ(r.Header("x-key"), "v");
  EXPECT_EQ(r.body, "hi");
  EXPECT_FALSE(r.keep_alive);
  EXPECT_TRUE(r.expect_continue);
  parser.Reset();
  EXPECT_EQ(parser.Feed(absl::string_view(bytes).substr(used)), bytes.size() - used);
  EXPECT_TRUE(parser.head_complete());
  EXPECT_EQ(parser.Feed(""), 0u);
  EXPECT_TRUE(parser.done());  // a GET has no body
  EXPECT_TRUE(parser.request().keep_alive);
}

TEST(HttpRequestParserTest, Http10KeepsAliveOnlyWhenAsked) {
  for (const auto& [header, keep] : std::vector<std::pair<std::string, bool>>{
           {"", false}, {"Connection: Keep-Alive\r\n", true}}) {
    HttpRequestParser parser(SmallLimits());
    parser.Feed("GET / HTTP/1.0\r\n" + header + "\r\n");
    ASSERT_TRUE(parser.head_complete());
    EXPECT_EQ(parser.request().keep_alive, keep) << header;
  }
}

TEST(HttpRequestParserTest, NothingSentIsNotStarted) {
  HttpRequestParser parser(SmallLimits());
  EXPECT_EQ(parser.Feed(""), 0u);
  EXPECT_FALSE(parser.started());
  parser.Feed("G");
  EXPECT_TRUE(parser.started());
}

}  // namespace
}  // namespace tandem
