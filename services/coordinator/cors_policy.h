// Cross-origin resource sharing for the HTTP API (--cors-origins), so that a page served from
// another origin can call it with fetch() (issue 30).
//
// Off by default: without --cors-origins no response carries CORS headers and browsers keep
// other origins' pages out (llama-server allows every origin by default; Tandem does not,
// because a server on a developer's machine or a private network would otherwise be callable
// by any page the developer opens, and a key-less deployment has nothing else in the way).
// With it, "*" allows every origin (Access-Control-Allow-Origin: *), a list allows the origins
// named (the request's Origin echoed, with Vary: Origin on every response).
//
// A preflight (OPTIONS, any route) is answered 204 without an API key (browsers never send
// credentials in a preflight): for an allowed origin with the methods, the headers OpenAI's
// and Anthropic's JavaScript clients send (and any x-stainless-* they name) and a max age; a
// disallowed origin gets the 204 without CORS headers, which the browser refuses.
//
// Thread-safe (immutable).
#ifndef TANDEM_SERVICES_COORDINATOR_CORS_POLICY_H_
#define TANDEM_SERVICES_COORDINATOR_CORS_POLICY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/coordinator/http_front.h"
#include "services/coordinator/http_request_parser.h"

namespace tandem {

class CorsPolicy {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  // Seconds a browser may cache a preflight's answer (Chromium caps it at 7200).
  static constexpr int kMaxAgeSeconds = 600;

  CorsPolicy() = default;  // off
  // --cors-origins: "" (off), "*", or comma-separated origins "http(s)://HOST[:PORT]" (no
  // path, no trailing '/'). kInvalidArgument naming the flag and the bad entry.
  static absl::StatusOr<CorsPolicy> Parse(absl::string_view flag);

  bool enabled() const { return any_ || !origins_.empty(); }
  // Whether a page of `origin` (an Origin header's value) may read the responses.
  bool Allows(absl::string_view origin) const;

  // The headers every response to `request` carries: Access-Control-Allow-Origin when its
  // Origin is allowed, Vary: Origin whenever the answer depends on it.
  void AddHeaders(const HttpRequest& request, Headers* headers) const;
  // The answer to an OPTIONS request (AddHeaders adds the origin's header later).
  HttpResponse Preflight(const HttpRequest& request) const;

 private:
  bool any_ = false;
  std::vector<std::string> origins_;  // lower-cased
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_CORS_POLICY_H_
