// An incremental, strict HTTP/1.1 request parser with limits, for the coordinator's HTTP
// front (http_front.h). Bytes go in as they arrive; nothing is buffered past a limit:
//
//   - the head (request line, header lines, and a chunked body's trailer lines) is at most
//     max_header_bytes and max_header_count lines: 431 (a request line alone over it: 414);
//   - the body, Content-Length or chunked, at most max_body_bytes: 413 as soon as a length
//     says so or the decoded bytes pass it;
//   - strict framing (RFC 9112, no request smuggling behind a proxy): 400 for two
//     Content-Length headers (even equal) or a list, Content-Length with Transfer-Encoding, a
//     Transfer-Encoding other than "chunked", a header line with no colon or with space before
//     it, a folded line, a NUL, a bare CR or a bare LF anywhere in the head, a bad chunk line,
//     two Host headers; 505 for an HTTP version other than 1.0 and 1.1.
//
// Feed() stops once at the end of the head (head_complete()), so that the caller can refuse a
// request (the API-key check) before reading its body, then again at the end of the request.
// An error is final: the caller answers error_status() and closes the connection.
//
// Not thread-safe: one parser per connection, used by one thread at a time.
#ifndef TANDEM_SERVICES_COORDINATOR_HTTP_REQUEST_PARSER_H_
#define TANDEM_SERVICES_COORDINATOR_HTTP_REQUEST_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem {

struct HttpLimits {
  size_t max_header_bytes = 16 << 10;  // the head: request line and header lines, CRLFs included
  int max_header_count = 64;           // header lines (a chunked body's trailers included)
  size_t max_body_bytes = 4 << 20;     // Content-Length, or a chunked body once decoded
};

struct HttpRequest {
  std::string method;     // "GET", "POST", ...
  std::string target;     // as sent: "/v1/models/x?y=1"
  std::string path;       // the target before '?', percent-decoded
  int minor_version = 1;  // HTTP/1.x
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;                                          // decoded (chunked framing removed)
  bool chunked = false;
  int64_t content_length = -1;  // -1: none given
  bool keep_alive = true;       // HTTP/1.1 unless "Connection: close"; 1.0 with "keep-alive"
  bool expect_continue = false;

  // The first header named `lower_name` ("" when absent).
  absl::string_view Header(absl::string_view lower_name) const;
};

class HttpRequestParser {
 public:
  explicit HttpRequestParser(const HttpLimits& limits) : limits_(limits) {}

  // Consumes a prefix of `data`; returns its length. Stops after the head and after the
  // request (the rest belongs to the next request), or at an error.
  size_t Feed(absl::string_view data);

  // True once the head is parsed and checked (until Reset), whether or not the body is in.
  bool head_complete() const { return head_complete_; }
  // True once the whole request is in: request() is complete.
  bool done() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kError; }
  // True when some byte of a request has been seen (a connection that sent nothing is idle).
  bool started() const { return started_; }
  int error_status() const { return error_status_; }   // 400, 413, 414, 431, 505
  const std::string& error() const { return error_; }  // a short reason, for the reply

  HttpRequest& request() { return request_; }
  // Ready for the next request on the same connection.
  void Reset();

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone, kError };

  size_t Fail(int status, std::string error);
  // Appends to line_ up to a CRLF; true when a whole line is in line_ (without its CRLF).
  // Sets an error on a NUL, a bare CR or LF, or a line past `max_bytes`.
  bool TakeLine(absl::string_view data, size_t* used, size_t max_bytes, int over_status);
  void RequestLine();
  void HeaderLine(bool trailer);
  void EndOfHead();  // framing checks; chooses the body's state
  void ChunkSizeLine();

  HttpLimits limits_;
  State state_ = State::kHead;
  bool started_ = false;
  bool request_line_done_ = false;
  bool head_complete_ = false;
  bool body_checked_ = false;  // a Content-Length over the limit is refused once the body starts
  bool cr_ = false;            // the last byte taken was a CR (a line must end CRLF)
  std::string line_;           // the line being read (head, chunk size or trailer)
  size_t head_bytes_ = 0;      // of the head so far
  int header_count_ = 0;
  int64_t remaining_ = 0;  // body bytes still to come (Content-Length, or this chunk)
  int content_length_headers_ = 0;
  int transfer_encoding_headers_ = 0;
  int host_headers_ = 0;
  int error_status_ = 0;
  std::string error_;
  HttpRequest request_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_HTTP_REQUEST_PARSER_H_
