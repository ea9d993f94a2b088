// libFuzzer target for the HTTP front's request parser (http_request_parser.h): each input is
// the bytes a client sends on one connection, fed whole and again in pieces whose sizes come
// from the input itself, reading on past each head and each request as the front does.
// Properties: Feed never consumes more than it is given; every error is 400, 413, 414, 431
// or 505; a complete request has at most the limits' header lines and body bytes, a path
// starting with '/', and a Content-Length body of exactly that length; and the split into
// pieces changes nothing (the same requests, errors and bodies). Nothing may crash or hang.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "services/coordinator/http_request_parser.h"

namespace tandem {
namespace {

constexpr int kMaxRequests = 16;

HttpLimits Limits() {
  HttpLimits limits;
  limits.max_header_bytes = 512;
  limits.max_header_count = 8;
  limits.max_body_bytes = 256;
  return limits;
}

// What the parser made of `data`: one line per request or error.
std::string Run(absl::string_view data, size_t piece) {
  std::string outcome;
  HttpRequestParser parser(Limits());
  size_t used = 0, arrived = std::min(piece, data.size());
  for (int requests = 0; requests < kMaxRequests;) {
    const absl::string_view window = data.substr(used, arrived - used);
    const size_t n = parser.Feed(window);
    TANDEM_FUZZ_ASSERT(n <= window.size(), "consumed %zu of %zu", n, window.size());
    used += n;
    if (parser.failed()) {
      const int s = parser.error_status();
      TANDEM_FUZZ_ASSERT(s == 400 || s == 413 || s == 414 || s == 431 || s == 505, "status %d", s);
      absl::StrAppend(&outcome, "error ", s, "\n");
      break;
    }
    if (parser.done()) {
      const HttpRequest& r = parser.request();
      TANDEM_FUZZ_ASSERT(r.headers.size() <= 8 && r.body.size() <= 256, "%zu headers, %zu bytes",
                         r.headers.size(), r.body.size());
      TANDEM_FUZZ_ASSERT(!r.path.empty() && r.target[0] == '/', "target %s", r.target.c_str());
      TANDEM_FUZZ_ASSERT(
          r.chunked || r.body.size() == static_cast<size_t>(std::max<int64_t>(r.content_length, 0)),
          "body %zu, Content-Length %lld", r.body.size(), static_cast<long long>(r.content_length));
      absl::StrAppend(&outcome, r.method, " ", r.target, " ", r.headers.size(), " ", r.body, " ",
                      r.keep_alive, "\n");
      parser.Reset();
      ++requests;
      continue;
    }
    if (n == 0) {
      if (arrived == data.size()) break;
      arrived = std::min(data.size(), arrived + piece);
    }
  }
  return outcome;
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 7;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string whole = tandem::Run(bytes, bytes.size() + 1);
  const std::string pieces = tandem::Run(bytes, piece);
  TANDEM_FUZZ_ASSERT(whole == pieces, "whole:\n%s\nin pieces of %zu:\n%s", whole.c_str(), piece,
                     pieces.c_str());
  return 0;
}
