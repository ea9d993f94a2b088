// The coordinator's HTTP/1.1 front: an event-driven (epoll) acceptor and reader that holds
// thousands of slow or idle connections cheaply, reads and checks each request under limits
// and a deadline, and hands only complete, checked requests to a bounded pool of handler
// threads. It replaced cpp-httplib's thread-per-connection server, where 150 connections
// dripping one header line a second held every thread and took /health down (issue 33).
//
// One loop thread accepts, does TLS handshakes, reads (never more than one read past the
// request it is parsing), parses (http_request_parser.h), enforces
//   - max_connections, and max_connections_per_address (the client's IP): a new connection
//     over either bound closes the oldest idle connection (keep-alive, or sent nothing yet)
//     of the same scope, or is itself closed when there is none;
//   - request_timeout: from a request's first byte to its last (not per read): 408, close;
//   - idle_timeout: a connection that sends no request this long is closed;
//   - the parser's limits and strict framing: 400/413/414/431/505, then close;
//   - max_buffered_body_bytes over all connections: 503, then close;
// then calls Handlers::check_head before reading any body (the API-key check: a refusal
// closes the connection unread) and Handlers::route with the whole request. Cheap answers
// (/health, errors) are written by the loop itself, so they never wait for a handler; other
// requests go to a pool of `threads` threads that call Handlers::handle with an HttpExchange
// to write the response (whole, or chunked as it is made: Server-Sent Events) and to ask
// whether the client has gone (so that its work can be cancelled, queued or running). An
// error answer is followed by a lingering close (the client's unread bytes are drained for a
// moment) so that the client reads the answer rather than a reset.
//
// Thread-safe: Start and Stop from any thread; handlers run on the loop thread (check_head,
// route, error) or on a pool thread (handle).
#ifndef TANDEM_SERVICES_COORDINATOR_HTTP_FRONT_H_
#define TANDEM_SERVICES_COORDINATOR_HTTP_FRONT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/coordinator/http_request_parser.h"

namespace tandem {

struct HttpFrontOptions {
  std::string host = "127.0.0.1";  // an IPv4 or IPv6 address (or "localhost")
  int port = 0;                    // 0 picks one
  HttpLimits limits;
  absl::Duration request_timeout = absl::Seconds(10);  // a request's first byte to its last
  absl::Duration idle_timeout = absl::Seconds(5);      // no request on a connection this long
  absl::Duration write_timeout = absl::Seconds(30);    // a client not reading what it is sent
  int max_connections = 4096;
  int max_connections_per_address = 512;
  // Request bodies held at once (being read, queued or handled): a request that would pass
  // it is 503 (at least limits.max_body_bytes is allowed).
  size_t max_buffered_body_bytes = 64 << 20;
  int threads = 8;            // handler threads
  std::string tls_cert = "";  // PEM files: HTTPS; empty: plain HTTP
  std::string tls_key = "";
};

struct HttpResponse {
  int status = 200;
  std::string content_type;                                  // empty: none
  std::vector<std::pair<std::string, std::string>> headers;  // more headers
  std::string body;
};

// What a handler thread has of its request's connection.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // The whole response. False when the client is gone (or the front is stopping).
  virtual bool Respond(const HttpResponse& response) = 0;
  // A response sent in pieces as they are made (chunked; to an HTTP/1.0 client, the body
  // then a close): its head (its body is ignored), then pieces, then End.
  virtual bool Start(const HttpResponse& head) = 0;
  virtual bool Write(absl::string_view piece) = 0;
  virtual bool End() = 0;
  // Whether the client has closed or reset its connection (a cheap poll; any thread, while
  // the handler runs).
  virtual bool ClientGone() const = 0;
};

class HttpFront {
 public:
  struct Handlers {
    // Loop thread, the head read, no body yet: a response refuses the request.
    std::function<std::optional<HttpResponse>(const HttpRequest&)> check_head;
    // Loop thread, the whole request read: a response answers it there (keep it cheap); none
    // sends the request to `handle` on a handler thread.
    std::function<std::optional<HttpResponse>(const HttpRequest&)> route;
    std::function<void(const HttpRequest&, HttpExchange&)> handle;
    // The response for an error the front finds itself (400, 408, 413, 414, 431, 503, 505).
    std::function<HttpResponse(int status, const std::string& message)> error;
    // --- #30 front ---
    // Optional. Loop thread, once the head is parsed, before check_head: may rewrite the
    // request's path (route aliases).
    std::function<void(HttpRequest&)> rewrite;
    // Optional. Any thread: headers added to every response to `request` (whole, streamed,
    // refused or an error of the front; CORS). The request's head may be partial (an error
    // found while parsing it).
    std::function<void(const HttpRequest& request,
                       std::vector<std::pair<std::string, std::string>>* headers)>
        more_headers;
    // --- end ---
  };

  // Binds (kInvalidArgument for bad TLS files, kUnavailable when the address cannot be
  // bound) and starts the loop and the handler threads. Ignores SIGPIPE and raises the
  // process's soft limit on open files to fit max_connections (within the hard limit).
  static absl::StatusOr<std::unique_ptr<HttpFront>> Start(const HttpFrontOptions& options,
                                                          Handlers handlers);
  ~HttpFront();  // Stop()

  int port() const;
  // Open connections (for tests and metrics).
  int connections() const;
  // Stops accepting and reading, closes the connections, waits for running handlers (whose
  // exchanges fail from now on, and whose ClientGone() says true).
  void Stop();

  class Loop;

 private:
  explicit HttpFront(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
};

// "200 OK", "404 Not Found", ...: the status line's reason.
absl::string_view HttpReason(int status);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_HTTP_FRONT_H_
