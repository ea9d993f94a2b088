// The coordinator's OpenAI-compatible HTTP API on the event-driven front (http_front.h), over
// the same Coordinator as the gRPC Generator: each request body becomes a
// tandem.v1.GenerateRequest (openai_request.h), runs through Coordinator::Generate, and the
// reply becomes the API's JSON (an ApiReply, api_reply.h: OpenAI's openai_response.h) or,
// with "stream": true, Server-Sent Events (OpenAI's "data: {chunk}" lines, then "data:
// [DONE]"; ": keep-alive" comments while nothing is generated). A client that disconnects, streamed or not, queued or running, cancels the
// rounds and frees the session on both workers, as a cancelled gRPC call does.
//
//   POST /v1/chat/completions, POST /v1/completions
//   POST /v1/messages, POST /v1/messages/count_tokens   Anthropic's Messages API (#30 apis:
//                                         anthropic_request.h; errors in Anthropic's shape)
//   POST /v1/responses                    OpenAI's Responses API, stateless (responses_request.h;
//                                         GET/DELETE /v1/responses/{id}: 404, nothing stored)
//   GET /v1/models, GET /v1/models/{id}   the target's model (its draft named under "tandem")
//   GET /health                           200 while a target is ready (SetServing), else 503
//   POST /tokenize, POST /detokenize      llama-server's token routes (token_routes.h)
//   OPTIONS any route                     a CORS preflight, without a key (cors_policy.h)
// and each /v1 route without /v1 (route_aliases.h). `model` may be any served name
// (DescribeModelResponse.served_model_names); replies echo it, with system_fingerprint.
//
// With tls_cert/tls_key it serves HTTPS (OpenSSL). With API keys, every route but GET
// /health needs `Authorization: Bearer KEY` (or `x-api-key: KEY`), or it is 401 before the
// body is read.
//
// Errors are OpenAI's {"error": {...}} with the status http_error.h maps; messages hide
// worker addresses and model paths (public_status.h). Every request logs one line
// (request_log.h). Bodies over max_body_bytes (chunked too) are 413 as soon as they pass it;
// the head's limits, the connection bounds, the request deadline and strict parsing are the
// front's (400, 408, 413, 414, 431, 503, 505 in the same JSON shape, then the connection
// closes).
// /health, /v1/models and refusals are answered on the front's loop thread, so they never
// wait behind running generations.
//
// Thread-safe: generations run on the front's pool of `threads` handler threads.
#ifndef TANDEM_SERVICES_COORDINATOR_HTTP_SERVER_H_
#define TANDEM_SERVICES_COORDINATOR_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/coordinator/api_keys.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/cors_policy.h"  // #30 front
#include "services/coordinator/http_front.h"
#include "services/coordinator/request_limits.h"

namespace tandem {

// kInvalidArgument unless `listen` is HOST:PORT (or [V6]:PORT) with a port in [0, 65535].
absl::Status CheckHttpListen(const std::string& listen);

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT ([::1]:PORT for IPv6); port 0 picks one
  RequestLimits limits;                // the coordinator's (--max-prompt-bytes, ...)
  size_t max_body_bytes = HttpLimits().max_body_bytes;  // --max-message-bytes
  int threads = 0;                    // 0: the coordinator's concurrent requests + 8
  std::string tls_cert = "";          // PEM certificate chain and key files: HTTPS; empty:
  std::string tls_key = "";           // plain HTTP
  const ApiKeys* api_keys = nullptr;  // null: no authentication; must outlive the server
  // Against abuse (issue 33): safe without flags; the defaults are the front's own.
  size_t max_header_bytes = HttpLimits().max_header_bytes;  // request line and headers together
  int max_header_count = HttpLimits().max_header_count;
  absl::Duration request_timeout = HttpFrontOptions().request_timeout;  // first byte to last
  absl::Duration idle_timeout = HttpFrontOptions().idle_timeout;  // keep-alive, silent new ones
  int max_connections = HttpFrontOptions().max_connections;       // then the oldest idle one closes
  int max_connections_per_address = HttpFrontOptions().max_connections_per_address;  // likewise
  size_t max_buffered_body_bytes = HttpFrontOptions().max_buffered_body_bytes;       // then 503
  CorsPolicy cors;  // #30 front: --cors-origins; off by default
};

class HttpServer {
 public:
  // Binds the address (kInvalidArgument for a malformed one, kUnavailable when it cannot be
  // bound) and serves on a thread of its own. `coordinator` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           Coordinator* coordinator);
  ~HttpServer();  // Stop()

  // HOST:PORT as bound (the port chosen when 0 was asked).
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // Whether a target is ready: what GET /health answers.
  void SetServing(bool serving);
  // Refuses new generation requests (503), waits up to `timeout` for the running ones, then
  // Stop()s.
  void Drain(absl::Duration timeout);
  // Cancels running requests and stops serving; waits for the handlers to return.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::string address_;
  int port_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_HTTP_SERVER_H_
