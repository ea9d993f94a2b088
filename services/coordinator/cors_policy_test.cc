#include "services/coordinator/cors_policy.h"

#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/route_aliases.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

HttpRequest WithOrigin(const std::string& method, const std::string& origin,
                       const std::string& request_headers = "") {
  HttpRequest r;
  r.method = method;
  r.path = "/v1/chat/completions";
  if (!origin.empty()) r.headers.emplace_back("origin", origin);
  if (!request_headers.empty()) {
    r.headers.emplace_back("access-control-request-headers", request_headers);
  }
  return r;
}

CorsPolicy::Headers HeadersFor(const CorsPolicy& policy, const HttpRequest& r) {
  CorsPolicy::Headers headers;
  policy.AddHeaders(r, &headers);
  return headers;
}

std::string Header(const HttpResponse& response, const std::string& name) {
  for (const auto& [n, v] : response.headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(CorsPolicyTest, OffByDefaultAddsNoHeaders) {
  ASSERT_OK_AND_ASSIGN(const CorsPolicy policy, CorsPolicy::Parse(""));
  EXPECT_FALSE(policy.enabled());
  EXPECT_THAT(HeadersFor(policy, WithOrigin("POST", "http://a.example")), IsEmpty());
  const HttpResponse preflight = policy.Preflight(WithOrigin("OPTIONS", "http://a.example"));
  EXPECT_EQ(preflight.status, 204);
  EXPECT_THAT(preflight.headers, IsEmpty());
}

TEST(CorsPolicyTest, AListedOriginIsEchoedWithVary) {
  ASSERT_OK_AND_ASSIGN(const CorsPolicy policy,
                       CorsPolicy::Parse("http://a.example:8080, https://b.example"));
  EXPECT_THAT(HeadersFor(policy, WithOrigin("POST", "http://a.example:8080")),
              ElementsAre(Pair("Vary", "Origin"),
                          Pair("Access-Control-Allow-Origin", "http://a.example:8080")));
  EXPECT_THAT(HeadersFor(policy, WithOrigin("GET", "HTTPS://B.example")),
              ElementsAre(Pair("Vary", "Origin"),
                          Pair("Access-Control-Allow-Origin", "HTTPS://B.example")));
}

TEST(CorsPolicyTest, AnOriginNotListedGetsOnlyVary) {
  ASSERT_OK_AND_ASSIGN(const CorsPolicy policy, CorsPolicy::Parse("http://a.example"));
  for (const char* origin : {"http://evil.example", "http://a.example:81", "https://a.example",
                             "null", ""}) {
    EXPECT_THAT(HeadersFor(policy, WithOrigin("POST", origin)),
                ElementsAre(Pair("Vary", "Origin")))
        << origin;
    EXPECT_EQ(Header(policy.Preflight(WithOrigin("OPTIONS", origin)),
                     "Access-Control-Allow-Methods"),
              "")
        << origin;
  }
}

TEST(CorsPolicyTest, StarAllowsEveryOriginWithAStar) {
  ASSERT_OK_AND_ASSIGN(const CorsPolicy policy, CorsPolicy::Parse("*"));
  EXPECT_THAT(HeadersFor(policy, WithOrigin("POST", "http://anything.example:9")),
              ElementsAre(Pair("Access-Control-Allow-Origin", "*")));
  EXPECT_THAT(HeadersFor(policy, WithOrigin("POST", "")), IsEmpty());  // not a browser
}

TEST(CorsPolicyTest, PreflightAllowsTheClientsHeadersAndOtherStainlessOnes) {
  ASSERT_OK_AND_ASSIGN(const CorsPolicy policy, CorsPolicy::Parse("http://a.example"));
  const HttpResponse r = policy.Preflight(WithOrigin(
      "OPTIONS", "http://a.example", "Authorization, X-Stainless-Poll-Helper, x-secret"));
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(Header(r, "Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  EXPECT_EQ(Header(r, "Access-Control-Max-Age"), "600");
  const std::string allowed = Header(r, "Access-Control-Allow-Headers");
  for (const char* name : {"authorization", "content-type", "x-api-key", "anthropic-version",
                           "openai-beta", "x-stainless-os", "x-stainless-retry-count",
                           "x-stainless-poll-helper"}) {
    EXPECT_THAT(allowed, HasSubstr(name));
  }
  EXPECT_THAT(allowed, ::testing::Not(HasSubstr("x-secret")));
}

TEST(CorsPolicyTest, BadFlagsAreRefusedNamingTheEntry) {
  for (const char* flag : {"a.example", "http://a.example/", "http://a.example/path", "http://",
                           "ftp://a.example", "*,http://a.example"}) {
    EXPECT_THAT(CorsPolicy::Parse(flag),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--cors-origins")))
        << flag;
  }
}

TEST(RouteAliasesTest, OpenAiRoutesWithoutV1AreServed) {
  const std::pair<const char*, const char*> kCases[] = {
      {"/chat/completions", "/v1/chat/completions"},
      {"/completions", "/v1/completions"},
      {"/models", "/v1/models"},
      {"/models/llama", "/v1/models/llama"},
      {"/embeddings", "/v1/embeddings"},
      {"/v1/chat/completions", "/v1/chat/completions"},
      {"/health", "/health"},
      {"/tokenize", "/tokenize"},
      {"/models/", "/models/"},
      {"/chat/completions/x", "/chat/completions/x"},
  };
  for (const auto& [path, want] : kCases) {
    HttpRequest r;
    r.path = path;
    AliasV1Route(r);
    EXPECT_EQ(r.path, want) << path;
  }
}

}  // namespace
}  // namespace tandem
