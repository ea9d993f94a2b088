#include "services/coordinator/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/json.h"
#include "services/coordinator/generate_run.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/openai_request.h"
#include "services/coordinator/openai_response.h"
#include "services/coordinator/public_status.h"
#include "services/coordinator/request_log.h"

namespace tandem {
namespace {

constexpr absl::Duration kKeepAlive = absl::Seconds(1);  // an SSE comment when idle this long
constexpr char kJson[] = "application/json";

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

// HTTPS with a certificate, plain HTTP without.
std::unique_ptr<httplib::Server> NewServer(const HttpServerOptions& options) {
  if (options.tls_cert.empty()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
}

// Counts one generation as running while it lives.
class InFlight {
 public:
  explicit InFlight(std::shared_ptr<std::atomic<int>> count) : count_(std::move(count)) {
    ++*count_;
  }
  ~InFlight() { --*count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::shared_ptr<std::atomic<int>> count_;
};

// The stream's state, shared by the handler, cpp-httplib's content provider and its releaser.
struct SseStream {
  std::shared_ptr<InFlight> in_flight;
  std::unique_ptr<GenerateRun> run;
  std::vector<v1::GenerateResponse> pending;  // taken from the run, not yet written
  bool ended = false;
  bool role_sent = false;
};

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
  void Run() { server_.listen_after_bind(); }
  void Stop() {
    stopping_ = true;  // running generations see it as a cancellation
    server_.stop();
  }
  bool running() const { return server_.is_running(); }
  // Refuses new generations, waits (bounded) for the running ones.
  void Drain(absl::Duration timeout) {
    draining_ = true;
    const absl::Time end = absl::Now() + timeout;
    while (*in_flight_ > 0 && absl::Now() < end) absl::SleepFor(absl::Milliseconds(10));
  }
  void SetServing(bool serving) { serving_ = serving; }

 private:
  void Routes();
  // 401 before routing (and before the body is read) without a valid key.
  httplib::Server::HandlerResponse Authenticate(const httplib::Request& req,
                                                httplib::Response& res) const;
  void Generate(const httplib::Request& req, httplib::Response& res, OpenAiEndpoint endpoint);
  void Complete(const OpenAiRequest& request, const OpenAiReply& reply, httplib::Response& res);
  // `in_flight` lives as long as the stream.
  void Stream(const OpenAiRequest& request, const OpenAiReply& reply,
              std::shared_ptr<InFlight> in_flight, httplib::Response& res);
  std::unique_ptr<GenerateRun> StartRun(const v1::GenerateRequest& generate);
  // Writes the stream's events until it ends (true) or the client is gone (false).
  bool Pump(SseStream& stream, const OpenAiReply& reply, httplib::DataSink& sink);
  void Error(httplib::Response& res, const absl::Status& status,
             ErrorOrigin origin = ErrorOrigin::kRequest) const;
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
  // Generations running (shared with the streams, which may end after a handler returns).
  std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
  std::unique_ptr<httplib::Server> owned_server_ = NewServer(options_);  // or an SSLServer
  httplib::Server& server_ = *owned_server_;
};

absl::StatusOr<int> HttpServer::Impl::Bind(const std::string& host, int port) {
  const size_t threads =
      options_.threads > 0 ? options_.threads : coordinator_->max_concurrent_requests() + 8;
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  if (!server_.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot serve HTTPS with --tls-cert '",
                                                   options_.tls_cert, "' and --tls-key '",
                                                   options_.tls_key, "' (not a matching pair?)"));
  }
  server_.set_payload_max_length(options_.max_body_bytes);
  Routes();
  int bound = -1;
  if (port == 0) {
    bound = server_.bind_to_any_port(host);
  } else if (server_.bind_to_port(host, port)) {
    bound = port;
  }
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", host, ":", port));
  }
  return bound;
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

void HttpServer::Impl::Error(httplib::Response& res, const absl::Status& status,
                             ErrorOrigin origin) const {
  const HttpError error = ToHttpError(PublicStatus(status, coordinator_->Redactions()), origin);
  res.status = error.status;
  res.set_content(HttpErrorBody(error), kJson);
}

httplib::Server::HandlerResponse HttpServer::Impl::Authenticate(const httplib::Request& req,
                                                                httplib::Response& res) const {
  if (options_.api_keys == nullptr || req.path == "/health") {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  const absl::Status allowed = options_.api_keys->Check(req.get_header_value("Authorization"));
  if (allowed.ok()) return httplib::Server::HandlerResponse::Unhandled;
  Error(res, allowed);
  res.set_header("WWW-Authenticate", "Bearer");
  return httplib::Server::HandlerResponse::Handled;
}

void HttpServer::Impl::Routes() {
  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return Authenticate(req, res);
  });
  server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    Generate(req, res, OpenAiEndpoint::kChatCompletions);
  });
  server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    Generate(req, res, OpenAiEndpoint::kCompletions);
  });
  server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        json::Serialize(json::Object{{"object", "list"}, {"data", json::Array{models_}}}), kJson);
  });
  server_.Get("/v1/models/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != model_) {
      return Error(res, absl::NotFoundError(absl::StrCat("the model '", std::string(req.matches[1]),
                                                         "' does not exist")));
    }
    res.set_content(json::Serialize(models_), kJson);
  });
  server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!serving_) return Error(res, absl::UnavailableError("no target worker is ready"));
    res.set_content(R"({"status":"ok"})", kJson);
  });
  // What cpp-httplib answers itself (no route, a body over the limit) in the same shape.
  server_.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
        const int status = res.status;
        if (status == 413) {
          Error(res,
                absl::InvalidArgumentError(absl::StrCat(
                    "the body is over ", options_.max_body_bytes, " bytes (--max-message-bytes)")),
                ErrorOrigin::kRequestLimit);
        } else if (status == 404) {
          Error(res, absl::NotFoundError(absl::StrCat("no route ", req.method, " ", req.path)));
        } else if (status < 500) {
          Error(res, absl::InvalidArgumentError(absl::StrCat("bad HTTP request (", status, ")")));
        } else {
          Error(res, absl::InternalError(absl::StrCat("HTTP ", status)));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
}

void HttpServer::Impl::Generate(const httplib::Request& req, httplib::Response& res,
                                OpenAiEndpoint endpoint) {
  if (draining_) return Error(res, absl::UnavailableError("the server is shutting down"));
  absl::StatusOr<OpenAiRequest> request = ParseOpenAiRequest(req.body, endpoint);
  if (!request.ok()) return Error(res, request.status());
  if (request->model != model_) {
    return Error(res, absl::NotFoundError(absl::StrCat("the model '", request->model,
                                                       "' does not exist; this server serves '",
                                                       model_, "' (GET /v1/models)")));
  }
  // The coordinator checks the same limits again; here a violation is told apart as 413.
  if (absl::Status limits = CheckGenerateLimits(request->generate, options_.limits); !limits.ok()) {
    return Error(res, limits, ErrorOrigin::kRequestLimit);
  }
  const OpenAiReply reply(endpoint, NewId(endpoint), absl::ToUnixSeconds(absl::Now()), model_,
                          request->include_usage);
  auto in_flight = std::make_shared<InFlight>(in_flight_);
  if (request->stream) return Stream(*request, reply, std::move(in_flight), res);
  Complete(*request, reply, res);
}

void HttpServer::Impl::Complete(const OpenAiRequest& request, const OpenAiReply& reply,
                                httplib::Response& res) {
  RequestLog log(request.generate);
  std::string text;
  v1::GenerationResult result;
  const absl::Status status = coordinator_->Generate(
      request.generate,
      [&](const v1::GenerateResponse& message) {
        log.Saw(message);
        if (message.has_delta()) text += message.delta().text();
        if (message.has_final()) result = message.final();
        return true;
      },
      [this] { return stopping_.load(); });
  log.Done(status);
  if (!status.ok()) return Error(res, status);
  res.set_content(reply.Complete(text, result), kJson);
}

std::unique_ptr<GenerateRun> HttpServer::Impl::StartRun(const v1::GenerateRequest& generate) {
  return std::make_unique<GenerateRun>(
      [this, generate](const GenerateRun::Write& write, const GenerateRun::Cancelled& cancelled) {
        RequestLog log(generate);
        const absl::Status status = coordinator_->Generate(
            generate,
            [&](const v1::GenerateResponse& message) {
              log.Saw(message);
              return write(message);
            },
            [&] { return stopping_ || cancelled(); });
        log.Done(status);
        return status;
      });
}

void HttpServer::Impl::Stream(const OpenAiRequest& request, const OpenAiReply& reply,
                              std::shared_ptr<InFlight> in_flight, httplib::Response& res) {
  auto stream = std::make_shared<SseStream>();
  stream->in_flight = std::move(in_flight);
  stream->run = StartRun(request.generate);
  // Until the first message the request can still fail with its own status (a bad sampling
  // value, a full queue, no target): wait for it.
  while (stream->pending.empty() && !stream->ended) {
    stream->ended = stream->run->Wait(absl::Seconds(1), &stream->pending);
  }
  if (stream->ended && stream->pending.empty()) {
    const absl::Status status = stream->run->status();
    if (!status.ok()) return Error(res, status);
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream, reply](size_t, httplib::DataSink& sink) { return Pump(*stream, reply, sink); },
      [stream](bool) { stream->run->Cancel(); });  // the destructor joins
}

namespace {

// The events one message of the run becomes (a chat stream opens with the role).
std::vector<std::string> SseEvents(const OpenAiReply& reply, const v1::GenerateResponse& m,
                                   bool* role_sent) {
  std::vector<std::string> events;
  if (reply.chat() && !*role_sent) {
    *role_sent = true;
    events.push_back(Sse(reply.RoleChunk()));
  }
  if (m.has_delta() && !m.delta().text().empty()) {
    events.push_back(Sse(reply.TextChunk(m.delta().text())));
  }
  if (m.has_final()) {
    events.push_back(Sse(reply.FinishChunk(m.final())));
    if (reply.include_usage()) events.push_back(Sse(reply.UsageChunk(m.final())));
  }
  return events;
}

}  // namespace

bool HttpServer::Impl::Pump(SseStream& stream, const OpenAiReply& reply, httplib::DataSink& sink) {
  auto send = [&](const std::string& event) {
    if (sink.write(event.data(), event.size())) return true;
    stream.run->Cancel();  // the client went away
    return false;
  };
  for (;;) {
    for (const v1::GenerateResponse& m : stream.pending) {
      for (const std::string& event : SseEvents(reply, m, &stream.role_sent)) {
        if (!send(event)) return false;
      }
    }
    stream.pending.clear();
    if (stream.ended) break;
    stream.ended = stream.run->Wait(kKeepAlive, &stream.pending);
    // A comment while nothing comes: writing is how a client that went away is noticed.
    if (stream.pending.empty() && !stream.ended && !send(": keep-alive\n\n")) return false;
  }
  const absl::Status status = stream.run->status();
  const std::string last =
      status.ok()
          ? Sse("[DONE]")
          : Sse(HttpErrorBody(ToHttpError(PublicStatus(status, coordinator_->Redactions()))));
  if (!send(last)) return false;
  sink.done();
  return true;
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

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl* server = impl_.get();
  listener_ = std::thread([server] { server->Run(); });
  // stop() before the listener runs would be lost: wait (bounded) until it does.
  for (int i = 0; i < 500 && !impl_->running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetServing(bool serving) { impl_->SetServing(serving); }

void HttpServer::Drain(absl::Duration timeout) {
  impl_->Drain(timeout);
  Stop();
}

void HttpServer::Stop() {
  if (!listener_.joinable()) return;
  impl_->Stop();
  listener_.join();
}

}  // namespace tandem
