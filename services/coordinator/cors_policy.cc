#include "services/coordinator/cors_policy.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem {
namespace {

// What OpenAI's and Anthropic's JavaScript clients send (besides x-stainless-*, allowed by
// prefix), lower-case.
constexpr const char* kAllowedHeaders[] = {
    "authorization",    "content-type",   "x-api-key",      "anthropic-version",
    "anthropic-beta",   "anthropic-dangerous-direct-browser-access",
    "openai-beta",      "openai-organization", "openai-project", "idempotency-key",
    "x-stainless-arch", "x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
    "x-stainless-retry-count", "x-stainless-runtime", "x-stainless-runtime-version",
    "x-stainless-timeout",     "x-stainless-async",   "x-stainless-helper-method"};
constexpr absl::string_view kStainlessPrefix = "x-stainless-";
constexpr size_t kMaxOriginBytes = 256;

bool HostCharacter(char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '[' || c == ']' || c == ':';
}

// "http(s)://HOST[:PORT]", or why not.
absl::Status CheckOrigin(absl::string_view origin) {
  absl::string_view rest = origin;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError("it does not start with http:// or https://");
  }
  if (rest.empty() || origin.size() > kMaxOriginBytes) {
    return absl::InvalidArgumentError("it names no host, or is over 256 bytes");
  }
  if (!std::all_of(rest.begin(), rest.end(), HostCharacter)) {
    return absl::InvalidArgumentError(
        "an origin is a scheme, a host and an optional port: no path, no trailing '/'");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CorsPolicy> CorsPolicy::Parse(absl::string_view flag) {
  CorsPolicy policy;
  for (absl::string_view entry : absl::StrSplit(flag, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry == "*") {
      policy.any_ = true;
      continue;
    }
    if (absl::Status ok = CheckOrigin(entry); !ok.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cors-origins: '", entry, "' is not an origin: ", ok.message()));
    }
    policy.origins_.push_back(absl::AsciiStrToLower(entry));
  }
  if (policy.any_ && !policy.origins_.empty()) {
    return absl::InvalidArgumentError("--cors-origins: '*' allows every origin; name no others");
  }
  return policy;
}

bool CorsPolicy::Allows(absl::string_view origin) const {
  if (origin.empty()) return false;
  if (any_) return true;
  const std::string lower = absl::AsciiStrToLower(origin);
  return std::find(origins_.begin(), origins_.end(), lower) != origins_.end();
}

void CorsPolicy::AddHeaders(const HttpRequest& request, Headers* headers) const {
  if (!enabled()) return;
  const absl::string_view origin = request.Header("origin");
  if (!any_) headers->emplace_back("Vary", "Origin");
  if (!Allows(origin)) return;
  headers->emplace_back("Access-Control-Allow-Origin", any_ ? "*" : std::string(origin));
}

HttpResponse CorsPolicy::Preflight(const HttpRequest& request) const {
  HttpResponse response;
  response.status = 204;
  if (!Allows(request.Header("origin"))) return response;
  std::vector<std::string> allowed(std::begin(kAllowedHeaders), std::end(kAllowedHeaders));
  // A client's other x-stainless-* headers (a helper's name, a poll interval) are allowed too.
  for (absl::string_view name :
       absl::StrSplit(request.Header("access-control-request-headers"), ',')) {
    const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
    if (absl::StartsWith(lower, kStainlessPrefix) && lower.size() <= 64 &&
        std::all_of(lower.begin(), lower.end(),
                    [](char c) { return absl::ascii_isalnum(c) || c == '-'; }) &&
        std::find(allowed.begin(), allowed.end(), lower) == allowed.end()) {
      allowed.push_back(lower);
    }
  }
  response.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                      {"Access-Control-Allow-Headers", absl::StrJoin(allowed, ", ")},
                      {"Access-Control-Max-Age", absl::StrCat(kMaxAgeSeconds)}};
  return response;
}

}  // namespace tandem
