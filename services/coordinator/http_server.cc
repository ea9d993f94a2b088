#include "services/coordinator/http_server.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/json.h"
#include "services/coordinator/choices.h"
#include "services/coordinator/generate_run.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/http_front.h"
#include "services/coordinator/openai_choices.h"
#include "services/coordinator/openai_request.h"
#include "services/coordinator/openai_response.h"
#include "services/coordinator/public_status.h"
#include "services/coordinator/request_log.h"

namespace tandem {
namespace {

constexpr absl::Duration kKeepAlive = absl::Seconds(1);  // an SSE comment when idle this long
constexpr char kJson[] = "application/json";
constexpr char kModelsPrefix[] = "/v1/models/";

std::string Sse(absl::string_view data) { return absl::StrCat("data: ", data, "\n\n"); }

// "HOST:PORT" or "[V6]:PORT" into its parts.
absl::Status SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), port) || *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen '", address, "' is not HOST:PORT (port 0 picks one)"));
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return absl::OkStatus();
}

// Counts one generation as running while it lives.
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& count) : count_(count) { ++count_; }
  ~InFlight() { --count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>& count_;
};

// A streamed reply's state while the handler writes it.
struct SseStream {
  std::unique_ptr<GenerateRun> run;
  std::vector<v1::GenerateResponse> pending;  // taken from the run, not yet written
  bool ended = false;
  // --- #30 n choices ---
  // The chunks each message becomes, per choice (openai_choices.h).
  std::optional<OpenAiStreamEvents> events;
  // --- end ---
};

HttpResponse JsonResponse(std::string body) {
  HttpResponse response;
  response.content_type = kJson;
  response.body = std::move(body);
  return response;
}

// The front's own refusals in OpenAI's shape.
HttpResponse FrontError(int status, const std::string& message) {
  HttpError error;
  if (status == 400 || status == 413) {
    error = ToHttpError(absl::InvalidArgumentError(message),
                        status == 413 ? ErrorOrigin::kRequestLimit : ErrorOrigin::kRequest);
  } else if (status == 503) {
    error = ToHttpError(absl::UnavailableError(message));
  } else {
    const char* code = status == 408   ? "request_timeout"
                       : status == 414 ? "uri_too_long"
                       : status == 431 ? "request_header_fields_too_large"
                       : status == 505 ? "http_version_not_supported"
                                       : "invalid_request";
    error = {status, "invalid_request_error", code, message, ""};
  }
  HttpResponse response = JsonResponse(HttpErrorBody(error));
  response.status = error.status;
  return response;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(const HttpServerOptions& options, Coordinator* coordinator)
      : options_(options), coordinator_(coordinator), started_(absl::ToUnixSeconds(absl::Now())) {
    const v1::DescribeModelResponse described = coordinator_->Describe();
    model_ = described.target().name();
    models_ = Models(described);
    id_prefix_ = absl::StrFormat("%08x", std::random_device()());
  }

  absl::StatusOr<int> Bind(const std::string& host, int port);
  void Stop() {
    stopping_ = true;  // running generations see it as a cancellation
    if (front_ != nullptr) front_->Stop();
  }
  // Refuses new generations, waits (bounded) for the running ones.
  void Drain(absl::Duration timeout) {
    draining_ = true;
    const absl::Time end = absl::Now() + timeout;
    while (in_flight_ > 0 && absl::Now() < end) absl::SleepFor(absl::Milliseconds(10));
  }
  void SetServing(bool serving) { serving_ = serving; }

 private:
  // The front's loop thread: the key check (before the body), then the cheap routes.
  std::optional<HttpResponse> Authenticate(const HttpRequest& request) const;
  std::optional<HttpResponse> Route(const HttpRequest& request) const;
  // A handler thread: a generation.
  void Generate(const HttpRequest& request, HttpExchange& exchange);
  void Complete(const OpenAiRequest& request, const OpenAiReply& reply, HttpExchange& exchange);
  void Stream(const OpenAiRequest& request, const OpenAiReply& reply, HttpExchange& exchange);
  std::unique_ptr<GenerateRun> StartRun(const v1::GenerateRequest& generate,
                                        const HttpExchange& exchange);
  // Writes the stream's events until it ends (true) or the client is gone (false).
  bool Pump(SseStream& stream, HttpExchange& exchange);
  HttpResponse Error(const absl::Status& status, ErrorOrigin origin = ErrorOrigin::kRequest) const;
  json::Object Models(const v1::DescribeModelResponse& described) const;
  std::string NewId(OpenAiEndpoint endpoint) {
    return absl::StrCat(endpoint == OpenAiEndpoint::kChatCompletions ? "chatcmpl-" : "cmpl-",
                        id_prefix_, "-", next_id_++);
  }

  HttpServerOptions options_;
  Coordinator* coordinator_;
  int64_t started_;
  std::string model_;
  json::Object models_;  // GET /v1/models
  std::string id_prefix_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> serving_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};  // generations running
  std::unique_ptr<HttpFront> front_;
};

absl::StatusOr<int> HttpServer::Impl::Bind(const std::string& host, int port) {
  HttpFrontOptions front;
  front.host = host;
  front.port = port;
  front.limits.max_header_bytes = options_.max_header_bytes;
  front.limits.max_header_count = options_.max_header_count;
  front.limits.max_body_bytes = options_.max_body_bytes;
  front.request_timeout = options_.request_timeout;
  front.idle_timeout = options_.idle_timeout;
  front.max_connections = options_.max_connections;
  front.max_connections_per_address = options_.max_connections_per_address;
  front.max_buffered_body_bytes = options_.max_buffered_body_bytes;
  front.threads =
      options_.threads > 0 ? options_.threads : coordinator_->max_concurrent_requests() + 8;
  front.tls_cert = options_.tls_cert;
  front.tls_key = options_.tls_key;
  HttpFront::Handlers handlers;
  handlers.check_head = [this](const HttpRequest& request) { return Authenticate(request); };
  handlers.route = [this](const HttpRequest& request) { return Route(request); };
  handlers.handle = [this](const HttpRequest& request, HttpExchange& exchange) {
    Generate(request, exchange);
  };
  handlers.error = [this](int status, const std::string& message) {
    return status == 413 ? Error(absl::InvalidArgumentError(
                                     absl::StrCat("the body is over ", options_.max_body_bytes,
                                                  " bytes (--max-message-bytes)")),
                                 ErrorOrigin::kRequestLimit)
                         : FrontError(status, message);
  };
  absl::StatusOr<std::unique_ptr<HttpFront>> started = HttpFront::Start(front, handlers);
  if (!started.ok()) return started.status();
  front_ = *std::move(started);
  return front_->port();
}

json::Object HttpServer::Impl::Models(const v1::DescribeModelResponse& described) const {
  const v1::ModelInfo& t = described.target();
  json::Object tandem{{"role", "target"},
                      {"architecture", t.architecture()},
                      {"context_size", t.context_size()},
                      {"vocab_size", t.vocab_size()},
                      {"parameter_count", t.parameter_count()},
                      {"weight_type", t.weight_type()},
                      {"draft", described.has_draft() ? json::Value(described.draft().name())
                                                      : json::Value(nullptr)},
                      {"default_draft_tokens", described.default_draft_tokens()}};
  return {{"id", t.name()},
          {"object", "model"},
          {"created", started_},
          {"owned_by", "tandem"},
          {"tandem", std::move(tandem)}};
}

HttpResponse HttpServer::Impl::Error(const absl::Status& status, ErrorOrigin origin) const {
  const HttpError error = ToHttpError(PublicStatus(status, coordinator_->Redactions()), origin);
  HttpResponse response = JsonResponse(HttpErrorBody(error));
  response.status = error.status;
  return response;
}

std::optional<HttpResponse> HttpServer::Impl::Authenticate(const HttpRequest& request) const {
  if (options_.api_keys == nullptr || request.path == "/health") return std::nullopt;
  const absl::Status allowed =
      options_.api_keys->Check(std::string(request.Header("authorization")));
  if (allowed.ok()) return std::nullopt;
  HttpResponse response = Error(allowed);
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

std::optional<HttpResponse> HttpServer::Impl::Route(const HttpRequest& request) const {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && path == "/health") {
    if (!serving_) return Error(absl::UnavailableError("no target worker is ready"));
    return JsonResponse(R"({"status":"ok"})");
  }
  if (get && path == "/v1/models") {
    return JsonResponse(
        json::Serialize(json::Object{{"object", "list"}, {"data", json::Array{models_}}}));
  }
  if (get && absl::StartsWith(path, kModelsPrefix) && path.size() > strlen(kModelsPrefix)) {
    const std::string id = path.substr(strlen(kModelsPrefix));
    if (id != model_) {
      return Error(absl::NotFoundError(absl::StrCat("the model '", id, "' does not exist")));
    }
    return JsonResponse(json::Serialize(models_));
  }
  if (request.method == "POST" && (path == "/v1/chat/completions" || path == "/v1/completions")) {
    if (draining_) return Error(absl::UnavailableError("the server is shutting down"));
    return std::nullopt;  // a generation: on a handler thread
  }
  return Error(absl::NotFoundError(absl::StrCat("no route ", request.method, " ", path)));
}

void HttpServer::Impl::Generate(const HttpRequest& http, HttpExchange& exchange) {
  const OpenAiEndpoint endpoint = http.path == "/v1/chat/completions"
                                      ? OpenAiEndpoint::kChatCompletions
                                      : OpenAiEndpoint::kCompletions;
  if (draining_) {
    exchange.Respond(Error(absl::UnavailableError("the server is shutting down")));
    return;
  }
  absl::StatusOr<OpenAiRequest> request = ParseOpenAiRequest(http.body, endpoint);
  if (!request.ok()) {
    exchange.Respond(Error(request.status()));
    return;
  }
  if (request->model != model_) {
    exchange.Respond(Error(absl::NotFoundError(
        absl::StrCat("the model '", request->model, "' does not exist; this server serves '",
                     model_, "' (GET /v1/models)"))));
    return;
  }
  // --- #30 n choices --- (checked again by the coordinator; here `n` is the error's param)
  if (absl::Status n = CheckChoices(request->generate, options_.limits); !n.ok()) {
    exchange.Respond(Error(OpenAiChoicesParam(n)));
    return;
  }
  // --- end ---
  // The coordinator checks the same limits again; here a violation is told apart as 413.
  if (absl::Status limits = CheckGenerateLimits(request->generate, options_.limits); !limits.ok()) {
    exchange.Respond(Error(limits, ErrorOrigin::kRequestLimit));
    return;
  }
  const OpenAiReply reply(endpoint, NewId(endpoint), absl::ToUnixSeconds(absl::Now()), model_,
                          request->include_usage);
  InFlight in_flight(in_flight_);
  if (request->stream) return Stream(*request, reply, exchange);
  Complete(*request, reply, exchange);
}

void HttpServer::Impl::Complete(const OpenAiRequest& request, const OpenAiReply& reply,
                                HttpExchange& exchange) {
  RequestLog log(request.generate);
  // --- #30 n choices --- (each message goes to its choice)
  OpenAiChoices choices(request.endpoint, ChoiceCount(request.generate),
                        request.generate.logprobs());
  // A client that leaves cancels the request, queued (polled every 20 ms) or running (every
  // round).
  const absl::Status status = coordinator_->Generate(
      request.generate,
      [&](const v1::GenerateResponse& message) {
        log.Saw(message);
        choices.Add(message);
        return true;
      },
      [&] { return stopping_ || exchange.ClientGone(); });
  log.Done(status);
  if (!status.ok()) {
    exchange.Respond(Error(status));
    return;
  }
  exchange.Respond(JsonResponse(choices.Reply(reply)));
  // --- end ---
}

std::unique_ptr<GenerateRun> HttpServer::Impl::StartRun(const v1::GenerateRequest& generate,
                                                        const HttpExchange& exchange) {
  return std::make_unique<GenerateRun>(
      [this, generate, &exchange](const GenerateRun::Write& write,
                                  const GenerateRun::Cancelled& cancelled) {
        RequestLog log(generate);
        const absl::Status status = coordinator_->Generate(
            generate,
            [&](const v1::GenerateResponse& message) {
              log.Saw(message);
              return write(message);
            },
            [&] { return stopping_ || cancelled() || exchange.ClientGone(); });
        log.Done(status);
        return status;
      });
}

void HttpServer::Impl::Stream(const OpenAiRequest& request, const OpenAiReply& reply,
                              HttpExchange& exchange) {
  SseStream stream;
  stream.events.emplace(reply, ChoiceCount(request.generate), request.generate.logprobs());
  stream.run = StartRun(request.generate, exchange);  // joined when `stream` goes
  // Until the first message the request can still fail with its own status (a bad sampling
  // value, a full queue, no target): wait for it.
  while (stream.pending.empty() && !stream.ended) {
    stream.ended = stream.run->Wait(absl::Seconds(1), &stream.pending);
  }
  if (stream.ended && stream.pending.empty()) {
    const absl::Status status = stream.run->status();
    if (!status.ok()) {
      exchange.Respond(Error(status));
      return;
    }
  }
  HttpResponse head;
  head.content_type = "text/event-stream";
  head.headers.emplace_back("Cache-Control", "no-cache");
  if (!exchange.Start(head) || !Pump(stream, exchange)) stream.run->Cancel();
}

bool HttpServer::Impl::Pump(SseStream& stream, HttpExchange& exchange) {
  for (;;) {
    for (const v1::GenerateResponse& m : stream.pending) {
      for (const std::string& event : stream.events->Of(m)) {
        if (!exchange.Write(Sse(event))) return false;
      }
    }
    stream.pending.clear();
    if (stream.ended) break;
    stream.ended = stream.run->Wait(kKeepAlive, &stream.pending);
    // A comment while nothing comes keeps proxies from timing the stream out.
    if (stream.pending.empty() && !stream.ended && !exchange.Write(": keep-alive\n\n")) {
      return false;
    }
  }
  const absl::Status status = stream.run->status();
  const std::string last =
      status.ok()
          ? Sse("[DONE]")
          : Sse(HttpErrorBody(ToHttpError(PublicStatus(status, coordinator_->Redactions()))));
  return exchange.Write(last) && exchange.End();
}

absl::Status CheckHttpListen(const std::string& listen) {
  std::string host;
  int port = 0;
  return SplitAddress(listen, &host, &port);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              Coordinator* coordinator) {
  std::string host;
  int port = 0;
  if (absl::Status split = SplitAddress(options.listen, &host, &port); !split.ok()) return split;
  auto impl = std::make_unique<Impl>(options, coordinator);
  absl::StatusOr<int> bound = impl->Bind(host, port);
  if (!bound.ok()) return bound.status();
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(impl)));
  server->port_ = *bound;
  server->address_ =
      absl::StrCat(host.find(':') != std::string::npos ? "[" + host + "]" : host, ":", *bound);
  return server;
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetServing(bool serving) { impl_->SetServing(serving); }

void HttpServer::Drain(absl::Duration timeout) {
  impl_->Drain(timeout);
  Stop();
}

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace tandem
