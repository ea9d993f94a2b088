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
#include "absl/strings/str_join.h"
#include "core/base/json.h"
#include "services/coordinator/choices.h"  // #30 n choices
// --- #30 apis ---
#include "services/coordinator/anthropic_request.h"
#include "services/coordinator/anthropic_response.h"
#include "services/coordinator/api_reply.h"
#include "services/coordinator/responses_request.h"
#include "services/coordinator/responses_response.h"
// --- end ---
#include "services/coordinator/generate_run.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/http_front.h"
#include "services/coordinator/openai_api_reply.h"
#include "services/coordinator/openai_error_param.h"  // #30 front
#include "services/coordinator/openai_fields.h"
#include "services/coordinator/openai_embeddings.h"  // #30 embeddings
#include "services/coordinator/openai_logprobs.h"
#include "services/coordinator/openai_request.h"
#include "services/coordinator/openai_response.h"
#include "services/coordinator/public_status.h"
#include "services/coordinator/request_log.h"
#include "services/coordinator/route_aliases.h"  // #30 front
#include "services/coordinator/token_routes.h"   // #30 front

namespace tandem {
namespace {

constexpr absl::Duration kKeepAlive = absl::Seconds(1);  // an SSE comment when idle this long
constexpr char kJson[] = "application/json";
constexpr char kModelsPrefix[] = "/v1/models/";
// --- #30 apis ---
constexpr char kMessages[] = "/v1/messages";
constexpr char kCountTokens[] = "/v1/messages/count_tokens";
constexpr char kResponses[] = "/v1/responses";
constexpr char kResponsesPrefix[] = "/v1/responses/";

// Anthropic's routes answer errors in Anthropic's shape.
bool IsAnthropicPath(const std::string& path) { return absl::StartsWith(path, kMessages); }
// --- end ---

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
    // --- #30 front ---
    names_.assign(described.served_model_names().begin(), described.served_model_names().end());
    if (names_.empty()) names_.push_back(model_);
    for (const std::string& name : names_) models_.push_back(Models(described, name));
    system_fingerprint_ = described.system_fingerprint();
    vocab_size_ = described.target().vocab_size();
    max_detokenize_ids_ = static_cast<size_t>(std::max(1, described.target().context_size()));
    // --- end ---
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
  // A handler thread: a generation, whichever API asked for it (an ApiReply shapes the
  // reply), through the same Coordinator::Generate.
  void Generate(const HttpRequest& request, HttpExchange& exchange);
  void GenerateOpenAi(const HttpRequest& http, HttpExchange& exchange);
  void RunApi(const v1::GenerateRequest& generate, bool stream, ApiReply& reply,
              HttpExchange& exchange);
  void Complete(const v1::GenerateRequest& generate, ApiReply& reply, HttpExchange& exchange);
  void Stream(const v1::GenerateRequest& generate, ApiReply& reply, HttpExchange& exchange);
  // --- #30 embeddings ---
  // A handler thread: POST /v1/embeddings (openai_embeddings.h).
  void Embeddings(const HttpRequest& request, HttpExchange& exchange);
  // --- end ---
  std::unique_ptr<GenerateRun> StartRun(const v1::GenerateRequest& generate,
                                        const HttpExchange& exchange);
  // Writes the stream's events until it ends (true) or the client is gone (false).
  bool Pump(SseStream& stream, ApiReply& reply, HttpExchange& exchange);
  // A failed run's response in the API's error shape.
  HttpResponse RunError(const absl::Status& status, const ApiReply& reply) const;
  HttpResponse Error(const absl::Status& status, ErrorOrigin origin = ErrorOrigin::kRequest) const;
  // --- #30 apis: Anthropic's Messages and OpenAI's Responses, over the same run ---
  HttpResponse ErrorFor(const std::string& path, const absl::Status& status,
                        ErrorOrigin origin = ErrorOrigin::kRequest) const;
  void GenerateMessages(const HttpRequest& http, HttpExchange& exchange);
  void CountTokens(const HttpRequest& http, HttpExchange& exchange);
  void GenerateResponses(const HttpRequest& http, HttpExchange& exchange);
  // The model and limit checks every API's request passes (a response when refused).
  std::optional<HttpResponse> CheckApiRequest(const std::string& path, const std::string& model,
                                              const v1::GenerateRequest& generate) const;
  std::string NewApiId(const char* prefix) {
    return absl::StrCat(prefix, id_prefix_, "-", next_id_++);
  }
  // --- end ---
  json::Object Models(const v1::DescribeModelResponse& described, const std::string& id) const;
  // --- #30 front ---
  // POST /tokenize and /detokenize (token_routes.h), on a handler thread.
  void TokenRoute(const HttpRequest& request, HttpExchange& exchange);
  bool Serves(const std::string& name) const {
    return std::find(names_.begin(), names_.end(), name) != names_.end();
  }
  // --- end ---
  std::string NewId(OpenAiEndpoint endpoint) {
    return absl::StrCat(endpoint == OpenAiEndpoint::kChatCompletions ? "chatcmpl-" : "cmpl-",
                        id_prefix_, "-", next_id_++);
  }

  HttpServerOptions options_;
  Coordinator* coordinator_;
  int64_t started_;
  std::string model_;
  // --- #30 front ---
  std::vector<std::string> names_;  // --served-model-name, or the target's own name
  json::Array models_;              // GET /v1/models: one per name
  std::string system_fingerprint_;
  int32_t vocab_size_ = 0;
  size_t max_detokenize_ids_ = 1;
  // --- end ---
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
  // --- #30 front ---
  handlers.rewrite = AliasV1Route;
  if (options_.cors.enabled()) {
    handlers.more_headers = [this](const HttpRequest& request, CorsPolicy::Headers* headers) {
      options_.cors.AddHeaders(request, headers);
    };
  }
  // --- end ---
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

json::Object HttpServer::Impl::Models(const v1::DescribeModelResponse& described,
                                      const std::string& id) const {
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
  return {{"id", id},
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
  // A preflight never carries the key (#30 front: CORS); it is answered with no data.
  if (options_.api_keys == nullptr || request.path == "/health" || request.method == "OPTIONS") {
    return std::nullopt;
  }
  std::string authorization(request.Header("authorization"));
  // --- #30 apis: Anthropic's clients send the key as `x-api-key: KEY` ---
  if (authorization.empty() && !request.Header("x-api-key").empty()) {
    authorization = absl::StrCat("Bearer ", request.Header("x-api-key"));
  }
  // --- end ---
  const absl::Status allowed = options_.api_keys->Check(authorization);
  if (allowed.ok()) return std::nullopt;
  HttpResponse response = ErrorFor(request.path, allowed);
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

std::optional<HttpResponse> HttpServer::Impl::Route(const HttpRequest& request) const {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (request.method == "OPTIONS") return options_.cors.Preflight(request);  // #30 front
  if (get && path == "/health") {
    if (!serving_) return Error(absl::UnavailableError("no target worker is ready"));
    return JsonResponse(R"({"status":"ok"})");
  }
  if (get && path == "/v1/models") {
    return JsonResponse(json::Serialize(json::Object{{"object", "list"}, {"data", models_}}));
  }
  if (get && absl::StartsWith(path, kModelsPrefix) && path.size() > strlen(kModelsPrefix)) {
    const std::string id = path.substr(strlen(kModelsPrefix));
    const auto named = std::find_if(models_.begin(), models_.end(), [&](const json::Value& m) {
      return m.as_object().Find("id")->as_string() == id;
    });
    if (named == models_.end()) {
      return Error(absl::NotFoundError(absl::StrCat("the model '", id, "' does not exist")));
    }
    return JsonResponse(json::Serialize(*named));
  }
  const bool tokens = path == "/tokenize" || path == "/detokenize";  // #30 front
  if (request.method == "POST" && (path == "/v1/chat/completions" || path == "/v1/completions" ||
                                  path == "/v1/embeddings" /* #30 embeddings */ || tokens)) {
    if (draining_) return Error(absl::UnavailableError("the server is shutting down"));
    return std::nullopt;  // a generation: on a handler thread
  }
  // --- #30 apis ---
  if (request.method == "POST" &&
      (path == kMessages || path == kCountTokens || path == kResponses)) {
    if (draining_) return ErrorFor(path, absl::UnavailableError("the server is shutting down"));
    return std::nullopt;  // a generation (or a tokenization): on a handler thread
  }
  if (absl::StartsWith(path, kResponsesPrefix) &&
      (get || request.method == "DELETE" || request.method == "POST")) {
    return Error(absl::NotFoundError(
        "this server is stateless: no response is stored (send store false and the whole "
        "input with each request)"));
  }
  if (IsAnthropicPath(path)) {
    return ErrorFor(path,
                    absl::NotFoundError(absl::StrCat("no route ", request.method, " ", path)));
  }
  // --- end ---
  return Error(absl::NotFoundError(absl::StrCat("no route ", request.method, " ", path)));
}

void HttpServer::Impl::Generate(const HttpRequest& http, HttpExchange& exchange) {
  if (http.path == "/tokenize" || http.path == "/detokenize") return TokenRoute(http, exchange);
  if (http.path == "/v1/embeddings") return Embeddings(http, exchange);  // #30 embeddings
  if (draining_) {
    exchange.Respond(ErrorFor(http.path, absl::UnavailableError("the server is shutting down")));
    return;
  }
  // --- #30 apis ---
  if (http.path == kMessages) return GenerateMessages(http, exchange);
  if (http.path == kCountTokens) return CountTokens(http, exchange);
  if (http.path == kResponses) return GenerateResponses(http, exchange);
  // --- end ---
  GenerateOpenAi(http, exchange);
}

void HttpServer::Impl::GenerateOpenAi(const HttpRequest& http, HttpExchange& exchange) {
  const OpenAiEndpoint endpoint = http.path == "/v1/chat/completions"
                                      ? OpenAiEndpoint::kChatCompletions
                                      : OpenAiEndpoint::kCompletions;
  absl::StatusOr<OpenAiRequest> request = ParseOpenAiRequest(http.body, endpoint);
  if (!request.ok()) {
    exchange.Respond(Error(request.status()));
    return;
  }
  // --- #30 n choices --- (checked again by the coordinator; here too with `n` as error.param)
  if (absl::Status n = CheckChoices(request->generate, options_.limits); !n.ok()) {
    exchange.Respond(Error(WithOpenAiParam(n, *request)));
    return;
  }
  // --- end ---
  // The coordinator checks the same limits again; here a violation is told apart as 413 (with
  // error.param, #30 front).
  if (absl::Status limits = CheckGenerateLimits(request->generate, options_.limits); !limits.ok()) {
    exchange.Respond(Error(WithOpenAiParam(limits, *request), ErrorOrigin::kRequestLimit));
    return;
  }
  if (std::optional<HttpResponse> refused =
          CheckApiRequest(http.path, request->model, request->generate)) {
    exchange.Respond(*std::move(refused));
    return;
  }
  // #30 front: the name the request used (as vLLM answers), and the fingerprint.
  OpenAiReply openai(endpoint, NewId(endpoint), absl::ToUnixSeconds(absl::Now()), request->model,
                     request->include_usage);
  openai.set_system_fingerprint(system_fingerprint_);
  OpenAiApiReply reply(std::move(openai), endpoint, request->generate.logprobs(),
                       ChoiceCount(request->generate));  // #30 n choices
  reply.set_request(*request);  // its errors name the body's fields (error.param)
  RunApi(request->generate, request->stream, reply, exchange);
}

void HttpServer::Impl::RunApi(const v1::GenerateRequest& generate, bool stream, ApiReply& reply,
                              HttpExchange& exchange) {
  InFlight in_flight(in_flight_);
  if (stream) return Stream(generate, reply, exchange);
  Complete(generate, reply, exchange);
}

HttpResponse HttpServer::Impl::RunError(const absl::Status& status, const ApiReply& reply) const {
  const HttpError error =
      ToHttpError(PublicStatus(reply.ForClient(status), coordinator_->Redactions()));
  HttpResponse response = JsonResponse(reply.ErrorBody(error));
  response.status = error.status;
  return response;
}

void HttpServer::Impl::Complete(const v1::GenerateRequest& generate, ApiReply& reply,
                                HttpExchange& exchange) {
  RequestLog log(generate);
  std::vector<CollectedReply> collected(ChoiceCount(generate));  // one per choice (#30 n)
  // A client that leaves cancels the request, queued (polled every 20 ms) or running (every
  // round).
  const absl::Status status = coordinator_->Generate(
      generate,
      [&](const v1::GenerateResponse& message) {
        log.Saw(message);
        Collect(message, collected);
        return true;
      },
      [&] { return stopping_ || exchange.ClientGone(); });
  log.Done(status);
  if (!status.ok()) {
    exchange.Respond(RunError(status, reply));
    return;
  }
  exchange.Respond(JsonResponse(reply.CompleteChoices(collected)));
}

// --- #30 embeddings ---
void HttpServer::Impl::Embeddings(const HttpRequest& http, HttpExchange& exchange) {
  InFlight in_flight(in_flight_);
  const EmbeddingsOutcome out =
      ServeEmbeddings(http.body, names_, options_.limits,
                      [this](const v1::EmbedRequest& r) { return coordinator_->Embed(r); });
  exchange.Respond(out.status.ok() ? JsonResponse(out.body) : Error(out.status, out.origin));
}
// --- end ---

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

void HttpServer::Impl::Stream(const v1::GenerateRequest& generate, ApiReply& reply,
                              HttpExchange& exchange) {
  SseStream stream;
  stream.run = StartRun(generate, exchange);  // joined when `stream` goes
  // Until the first message the request can still fail with its own status (a bad sampling
  // value, a full queue, no target): wait for it.
  while (stream.pending.empty() && !stream.ended) {
    stream.ended = stream.run->Wait(absl::Seconds(1), &stream.pending);
  }
  if (stream.ended && stream.pending.empty()) {
    const absl::Status status = stream.run->status();
    if (!status.ok()) {
      exchange.Respond(RunError(status, reply));
      return;
    }
  }
  HttpResponse head;
  head.content_type = "text/event-stream";
  head.headers.emplace_back("Cache-Control", "no-cache");
  if (!exchange.Start(head) || !Pump(stream, reply, exchange)) stream.run->Cancel();
}

bool HttpServer::Impl::Pump(SseStream& stream, ApiReply& reply, HttpExchange& exchange) {
  for (;;) {
    for (const v1::GenerateResponse& m : stream.pending) {
      for (const std::string& event : reply.Events(m)) {
        if (!exchange.Write(event)) return false;
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
          ? reply.StreamEnd()
          : reply.StreamError(ToHttpError(PublicStatus(status, coordinator_->Redactions())));
  return (last.empty() || exchange.Write(last)) && exchange.End();
}

// --- #30 apis: Anthropic's Messages API and OpenAI's Responses API. Their requests become
// the same GenerateRequest (anthropic_request.h, responses_request.h) and run through the
// same Coordinator::Generate (StartRun); only the JSON around the run is theirs (ApiReply).
HttpResponse HttpServer::Impl::ErrorFor(const std::string& path, const absl::Status& status,
                                        ErrorOrigin origin) const {
  if (!IsAnthropicPath(path)) return Error(status, origin);
  const HttpError error = ToHttpError(PublicStatus(status, coordinator_->Redactions()), origin);
  HttpResponse response = JsonResponse(AnthropicErrorBody(error));
  response.status = error.status;
  return response;
}

std::optional<HttpResponse> HttpServer::Impl::CheckApiRequest(
    const std::string& path, const std::string& model, const v1::GenerateRequest& generate) const {
  if (!Serves(model)) {  // #30 front: any served name
    return ErrorFor(path, absl::NotFoundError(absl::StrCat(
                              "the model '", model, "' does not exist; this server serves '",
                              absl::StrJoin(names_, "', '"), "' (GET /v1/models)")));
  }
  // The coordinator checks the same limits again; here a violation is told apart as 413.
  if (absl::Status limits = CheckGenerateLimits(generate, options_.limits); !limits.ok()) {
    return ErrorFor(path, limits, ErrorOrigin::kRequestLimit);
  }
  return std::nullopt;
}

void HttpServer::Impl::GenerateMessages(const HttpRequest& http, HttpExchange& exchange) {
  absl::StatusOr<AnthropicRequest> request =
      ParseAnthropicRequest(http.body, AnthropicEndpoint::kMessages);
  if (!request.ok()) {
    exchange.Respond(ErrorFor(http.path, request.status()));
    return;
  }
  if (auto refused = CheckApiRequest(http.path, request->model, request->generate)) {
    exchange.Respond(*std::move(refused));
    return;
  }
  AnthropicReply reply(
      NewApiId("msg_"), request->model,
      {request->generate.stop_strings().begin(), request->generate.stop_strings().end()});
  RunApi(request->generate, request->stream, reply, exchange);
}

void HttpServer::Impl::CountTokens(const HttpRequest& http, HttpExchange& exchange) {
  absl::StatusOr<AnthropicRequest> request =
      ParseAnthropicRequest(http.body, AnthropicEndpoint::kCountTokens);
  if (!request.ok()) {
    exchange.Respond(ErrorFor(http.path, request.status()));
    return;
  }
  if (auto refused = CheckApiRequest(http.path, request->model, request->generate)) {
    exchange.Respond(*std::move(refused));
    return;
  }
  // The rendered prompt, tokenized as a Generate of the same conversation tokenizes it.
  v1::TokenizeRequest tokenize;
  *tokenize.mutable_chat() = request->generate.chat();
  absl::StatusOr<v1::TokenizeResponse> tokens = coordinator_->Tokenize(tokenize);
  if (!tokens.ok()) {
    exchange.Respond(ErrorFor(http.path, tokens.status()));
    return;
  }
  exchange.Respond(JsonResponse(json::Serialize(
      json::Object{{"input_tokens", static_cast<int64_t>(tokens->token_ids_size())}})));
}

void HttpServer::Impl::GenerateResponses(const HttpRequest& http, HttpExchange& exchange) {
  absl::StatusOr<ResponsesRequest> request = ParseResponsesRequest(http.body);
  if (!request.ok()) {
    exchange.Respond(Error(request.status()));
    return;
  }
  if (auto refused = CheckApiRequest(http.path, request->model, request->generate)) {
    exchange.Respond(*std::move(refused));
    return;
  }
  ResponsesReply reply(NewApiId("resp_"), absl::ToUnixSeconds(absl::Now()), request->model,
                       *request);
  RunApi(request->generate, request->stream, reply, exchange);
}

// --- #30 front ---
void HttpServer::Impl::TokenRoute(const HttpRequest& http, HttpExchange& exchange) {
  if (http.path == "/tokenize") {
    absl::StatusOr<TokenizeBody> body = ParseTokenizeBody(http.body);
    if (!body.ok()) return static_cast<void>(exchange.Respond(Error(body.status())));
    absl::StatusOr<v1::TokenizeResponse> ids = coordinator_->Tokenize(body->request);
    if (!ids.ok()) {
      const absl::Status status = ids.status();
      const bool client = absl::IsInvalidArgument(status) || absl::IsOutOfRange(status);
      exchange.Respond(Error(client && !openai::ErrorParam(status).has_value()
                                 ? openai::WithParam(status, "content")
                                 : status));
      return;
    }
    exchange.Respond(
        JsonResponse(TokenizeReply(*ids, body->with_pieces, coordinator_->token_bytes())));
    return;
  }
  absl::StatusOr<v1::DetokenizeRequest> ids =
      ParseDetokenizeBody(http.body, vocab_size_, max_detokenize_ids_);
  if (!ids.ok()) return static_cast<void>(exchange.Respond(Error(ids.status())));
  absl::StatusOr<v1::DetokenizeResponse> text = coordinator_->Detokenize(*ids);
  if (!text.ok()) return static_cast<void>(exchange.Respond(Error(text.status())));
  exchange.Respond(JsonResponse(DetokenizeReply(*text)));
}
// --- end ---

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
