#include "services/coordinator/http_front.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/coordinator/http_transport.h"

namespace tandem {
namespace {

constexpr size_t kReadBytes = 64 << 10;  // one read: the most a connection holds unparsed
// Read from one connection per turn of the loop, so that a client sending fast (a body
// flood) cannot keep the loop from the others (/health) for more than a few milliseconds.
constexpr size_t kReadBytesPerTurn = 256 << 10;
constexpr absl::Duration kLinger = absl::Seconds(2);
constexpr size_t kLingerBytes = 1 << 20;  // drained at most before closing after an error
constexpr absl::Duration kSweepEvery = absl::Milliseconds(100);
constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;

epoll_event Event(uint32_t events, uint64_t id) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  return event;
}

enum class Phase {
  kHandshake,  // TLS handshake (under the request deadline)
  kIdle,       // waiting for a request's first byte (under the idle deadline)
  kReading,    // a request started (under the request deadline)
  kWriting,    // the loop writes a response
  kHandling,   // a handler thread owns the connection (queued or running)
  kLingering,  // answered an error: draining the client's bytes, then closing
};

struct Conn {
  Conn(uint64_t id, int fd, SSL_CTX* ctx, std::string address, const HttpLimits& limits)
      : id(id), io(fd, ctx), address(std::move(address)), parser(limits) {}

  const uint64_t id;
  HttpTransport io;
  const std::string address;  // the client's IP
  HttpRequestParser parser;
  std::string in;   // read, not parsed yet: the start of a pipelined request
  std::string out;  // a response the loop writes
  size_t out_sent = 0;
  Phase phase = Phase::kIdle;
  absl::Time deadline;
  absl::Time idle_since;
  bool head_checked = false;
  bool close_after = false;  // close once `out` is sent
  uint32_t events = 0;       // registered with epoll; 0: not registered
  size_t lingered = 0;
  size_t body_counted = 0;  // of the body, in the loop's buffered total
};

// The head of a response: `length` is the body's, or -1 chunked, or -2 until the close.
std::string ResponseHead(const HttpResponse& r, int64_t length, bool close, int minor_version,
                         const HttpFront::Handlers& handlers, const HttpRequest& request) {
  std::string head = absl::StrCat("HTTP/1.1 ", r.status, " ", HttpReason(r.status), "\r\n");
  if (!r.content_type.empty()) absl::StrAppend(&head, "Content-Type: ", r.content_type, "\r\n");
  for (const auto& [name, value] : r.headers) absl::StrAppend(&head, name, ": ", value, "\r\n");
  if (handlers.more_headers) {  // #30 front: CORS
    std::vector<std::pair<std::string, std::string>> more;
    handlers.more_headers(request, &more);
    for (const auto& [name, value] : more) absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  if (length >= 0) {
    absl::StrAppend(&head, "Content-Length: ", length, "\r\n");
  } else if (length == -1) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  if (close) {
    head += "Connection: close\r\n";
  } else if (minor_version == 0) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

std::string PeerAddress(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, text, sizeof(text));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, text, sizeof(text));
  }
  return text;
}

// A listening socket on host:port; its fd and the bound port.
absl::StatusOr<std::pair<int, int>> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", host, ":", port));
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (fd < 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", host, ":", port));
  }
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                        : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return std::make_pair(fd, bound_port);
}

}  // namespace

absl::string_view HttpReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 500 ? "Client Error" : "Server Error";
  }
}

class HttpFront::Loop {
 public:
  Loop(const HttpFrontOptions& options, HttpFront::Handlers handlers, SslCtx ctx, int listen_fd,
       int port);
  ~Loop();

  void Start();
  void Stop();
  int port() const { return port_; }
  int connections() const { return connections_; }

 private:
  void Run();
  void Worker();
  // A handler thread gives the connection back: for the next request, or to be closed.
  void Return(Conn* c, bool keep_alive);
  void TakeReturned();
  void Accept();
  bool Admit(const std::string& address);
  Conn* OldestIdle(const std::string* address);
  void Drive(Conn* c);
  void ReadAndParse(Conn* c);
  void Busy(Conn* c);  // 503: too many bodies held
  void Dispatch(Conn* c);
  void Respond(Conn* c, const HttpResponse& response, bool close);
  void Flush(Conn* c);
  void NextRequest(Conn* c);
  void StartLinger(Conn* c);
  void Linger(Conn* c);
  void Close(Conn* c);
  void SetEvents(Conn* c, uint32_t events);
  void Sweep();
  // Counts the body's growth (or `announced` bytes to come) in the buffered total; false
  // when that passes max_buffered_body_bytes.
  bool CountBody(Conn* c, size_t announced = 0);
  void UncountBody(Conn* c);

  const HttpFrontOptions options_;
  const HttpFront::Handlers handlers_;
  const SslCtx ctx_;
  const int listen_fd_;
  const int port_;
  const int epoll_fd_;
  const int wake_fd_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};

  // The loop thread's.
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, int> per_address_;
  std::vector<uint64_t> ready_;  // connections to drive on the next turn without an event
  size_t buffered_ = 0;          // request bodies held, as counted by CountBody
  uint64_t next_id_ = 2;
  bool accepting_ = true;
  absl::Time accept_again_ = absl::InfinitePast();
  absl::Time last_sweep_ = absl::InfinitePast();
  char buffer_[kReadBytes];

  absl::Mutex mutex_;
  std::deque<Conn*> queue_ ABSL_GUARDED_BY(mutex_);  // complete requests for the handlers
  std::vector<std::pair<Conn*, bool>> returned_ ABSL_GUARDED_BY(mutex_);
  bool stopped_ ABSL_GUARDED_BY(mutex_) = false;

  std::thread loop_thread_;
  std::vector<std::thread> workers_;
};

namespace {

// A handler thread's side of its request's connection.
class Exchange final : public HttpExchange {
 public:
  Exchange(Conn& c, absl::Duration write_timeout, const std::atomic<bool>& stop,
           const HttpFront::Handlers& handlers)
      : c_(c),
        request_(c.parser.request()),
        write_timeout_(write_timeout),
        stop_(stop),
        handlers_(handlers) {}

  bool Respond(const HttpResponse& r) override {
    if (started_) return false;
    started_ = true;
    close_ = !request_.keep_alive;
    std::string bytes = ResponseHead(r, static_cast<int64_t>(r.body.size()), close_,
                                     request_.minor_version, handlers_, request_);
    if (request_.method != "HEAD") bytes += r.body;
    ended_ = Send(bytes);
    return ended_;
  }
  bool Start(const HttpResponse& head) override {
    if (started_) return false;
    started_ = true;
    chunked_ = request_.minor_version == 1;
    close_ = !request_.keep_alive || !chunked_;
    return Send(ResponseHead(head, chunked_ ? -1 : -2, close_, request_.minor_version, handlers_,
                             request_));
  }
  bool Write(absl::string_view piece) override {
    if (!started_ || ended_) return false;
    if (piece.empty()) return ok_;
    if (!chunked_) return Send(piece);
    return Send(absl::StrCat(absl::Hex(piece.size()), "\r\n", piece, "\r\n"));
  }
  bool End() override {
    if (!started_ || ended_) return false;
    ended_ = !chunked_ || Send("0\r\n\r\n");
    return ended_ && ok_;
  }
  bool ClientGone() const override { return stop_ || c_.io.ClientGone(); }

  // Whether the connection can carry the next request.
  bool reusable() const { return ok_ && ended_ && !close_; }

 private:
  bool Send(absl::string_view bytes) {
    if (ok_) ok_ = c_.io.WriteAll(bytes, absl::Now() + write_timeout_, stop_);
    return ok_;
  }

  Conn& c_;
  const HttpRequest& request_;
  const absl::Duration write_timeout_;
  const std::atomic<bool>& stop_;
  const HttpFront::Handlers& handlers_;  // #30 front: more_headers
  bool started_ = false;
  bool ended_ = false;
  bool chunked_ = false;
  bool close_ = false;
  bool ok_ = true;
};

}  // namespace

HttpFront::Loop::Loop(const HttpFrontOptions& options, HttpFront::Handlers handlers, SslCtx ctx,
                      int listen_fd, int port)
    : options_(options),
      handlers_(std::move(handlers)),
      ctx_(std::move(ctx)),
      listen_fd_(listen_fd),
      port_(port),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  epoll_event listen_event = Event(EPOLLIN, kListenerId);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event);
  epoll_event wake_event = Event(EPOLLIN, kWakeId);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event);
}

HttpFront::Loop::~Loop() {
  Stop();
  close(wake_fd_);
  close(epoll_fd_);
  close(listen_fd_);
}

void HttpFront::Loop::Start() {
  loop_thread_ = std::thread([this] { Run(); });
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
}

void HttpFront::Loop::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_ = true;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (loop_thread_.joinable()) loop_thread_.join();
  for (std::thread& worker : workers_) worker.join();
  conns_.clear();  // every thread is done: the queued and returned connections go too
}

void HttpFront::Loop::Run() {
  epoll_event events[256];
  while (!stopping_) {
    const int n = epoll_wait(epoll_fd_, events, 256, ready_.empty() ? 50 : 0);
    for (int i = 0; i < n && !stopping_; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        Accept();
      } else if (id == kWakeId) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
      } else if (auto it = conns_.find(id); it != conns_.end()) {
        Drive(it->second.get());
      }
    }
    TakeReturned();
    std::vector<uint64_t> ready;  // one turn each: what they add waits for the next
    ready.swap(ready_);
    for (uint64_t id : ready) {
      if (auto it = conns_.find(id); it != conns_.end()) Drive(it->second.get());
    }
    const absl::Time now = absl::Now();
    if (!accepting_ && now >= accept_again_) {
      epoll_event listen_event = Event(EPOLLIN, kListenerId);
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event);
      accepting_ = true;
    }
    if (now - last_sweep_ >= kSweepEvery) {
      last_sweep_ = now;
      Sweep();
    }
  }
  // Stopping: refuse new connections; close all but those the handlers hold.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  shutdown(listen_fd_, SHUT_RDWR);
  std::vector<Conn*> open;
  for (auto& [id, c] : conns_) {
    if (c->phase != Phase::kHandling) open.push_back(c.get());
  }
  for (Conn* c : open) Close(c);
}

void HttpFront::Loop::Worker() {
  for (;;) {
    Conn* c = nullptr;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(
          +[](Loop* loop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop->mutex_) {
            return loop->stopped_ || !loop->queue_.empty();
          },
          this));
      if (stopped_) return;  // the queued connections are closed with the loop
      c = queue_.front();
      queue_.pop_front();
    }
    Exchange exchange(*c, options_.write_timeout, stopping_, handlers_);
    // A client that left while its request waited for a thread is not served.
    if (!c->io.ClientGone()) handlers_.handle(c->parser.request(), exchange);
    Return(c, exchange.reusable());
  }
}

void HttpFront::Loop::Return(Conn* c, bool keep_alive) {
  absl::MutexLock lock(&mutex_);
  returned_.emplace_back(c, keep_alive);
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void HttpFront::Loop::TakeReturned() {
  std::vector<std::pair<Conn*, bool>> returned;
  {
    absl::MutexLock lock(&mutex_);
    returned.swap(returned_);
  }
  for (auto [c, keep_alive] : returned) {
    if (keep_alive) {
      NextRequest(c);
    } else {
      Close(c);
    }
  }
}

void HttpFront::Loop::Accept() {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t length = sizeof(peer);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &length,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: make room if an idle connection can go, else pause accepting.
        if (Conn* idle = OldestIdle(nullptr)) {
          Close(idle);
          continue;
        }
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accepting_ = false;
        accept_again_ = absl::Now() + absl::Milliseconds(100);
      }
      return;
    }
    std::string address = PeerAddress(peer);
    if (!Admit(address)) {
      close(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // events go out as made
    const uint64_t id = next_id_++;
    auto owned = std::make_unique<Conn>(id, fd, ctx_.get(), std::move(address), options_.limits);
    Conn* c = owned.get();
    const absl::Time now = absl::Now();
    c->idle_since = now;
    c->phase = ctx_ != nullptr ? Phase::kHandshake : Phase::kIdle;
    c->deadline = now + (ctx_ != nullptr ? options_.request_timeout : options_.idle_timeout);
    ++per_address_[c->address];
    conns_.emplace(id, std::move(owned));
    connections_ = static_cast<int>(conns_.size());
    SetEvents(c, EPOLLIN | EPOLLRDHUP);
  }
}

bool HttpFront::Loop::Admit(const std::string& address) {
  if (static_cast<int>(conns_.size()) >= options_.max_connections) {
    Conn* idle = OldestIdle(nullptr);
    if (idle == nullptr) return false;
    Close(idle);
  }
  auto it = per_address_.find(address);
  if (it != per_address_.end() && it->second >= options_.max_connections_per_address) {
    Conn* idle = OldestIdle(&address);
    if (idle == nullptr) return false;
    Close(idle);
  }
  return true;
}

Conn* HttpFront::Loop::OldestIdle(const std::string* address) {
  Conn* oldest = nullptr;
  for (auto& [id, c] : conns_) {
    if (c->phase != Phase::kIdle || (address != nullptr && c->address != *address)) continue;
    if (oldest == nullptr || c->idle_since < oldest->idle_since) oldest = c.get();
  }
  return oldest;
}

void HttpFront::Loop::Drive(Conn* c) {
  switch (c->phase) {
    case Phase::kHandshake:
      switch (c->io.Handshake()) {
        case HttpTransport::Io::kOk:
          c->phase = Phase::kIdle;
          c->idle_since = absl::Now();
          c->deadline = c->idle_since + options_.idle_timeout;
          return ReadAndParse(c);
        case HttpTransport::Io::kWantRead:
          return SetEvents(c, EPOLLIN | EPOLLRDHUP);
        case HttpTransport::Io::kWantWrite:
          return SetEvents(c, EPOLLOUT);
        case HttpTransport::Io::kClosed:
          return Close(c);
      }
      return;
    case Phase::kIdle:
    case Phase::kReading:
      return ReadAndParse(c);
    case Phase::kWriting:
      return Flush(c);
    case Phase::kLingering:
      return Linger(c);
    case Phase::kHandling:
      return;
  }
}

void HttpFront::Loop::ReadAndParse(Conn* c) {
  HttpRequestParser& parser = c->parser;
  size_t turn = 0;  // bytes read this turn
  for (;;) {
    const size_t used = parser.Feed(c->in);
    c->in.erase(0, used);
    if (!CountBody(c)) return Busy(c);
    if (c->phase == Phase::kIdle && parser.started()) {
      c->phase = Phase::kReading;
      c->deadline = absl::Now() + options_.request_timeout;
    }
    if (parser.failed()) {
      return Respond(c, handlers_.error(parser.error_status(), parser.error()), /*close=*/true);
    }
    const HttpRequest& request = parser.request();
    if (parser.head_complete() && !c->head_checked) {
      c->head_checked = true;
      if (handlers_.rewrite) handlers_.rewrite(parser.request());  // #30 front: aliases
      if (std::optional<HttpResponse> refused = handlers_.check_head(request)) {
        return Respond(c, *refused, /*close=*/true);  // the body stays unread
      }
      const bool body_fits =
          request.chunked ||
          (request.content_length > 0 &&
           request.content_length <= static_cast<int64_t>(options_.limits.max_body_bytes));
      if (body_fits && !request.chunked &&
          !CountBody(c, static_cast<size_t>(request.content_length))) {
        return Busy(c);
      }
      if (request.expect_continue && body_fits) {
        constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        size_t sent = 0;
        if (c->io.Write(kContinue, &sent) != HttpTransport::Io::kOk || sent != kContinue.size()) {
          return Close(c);
        }
      }
      continue;
    }
    if (parser.done()) return Dispatch(c);
    if (used > 0) continue;
    if (turn >= kReadBytesPerTurn) {  // the others' turn; this one goes on next turn
      ready_.push_back(c->id);
      return;
    }
    size_t got = 0;
    switch (c->io.Read(buffer_, sizeof(buffer_), &got)) {
      case HttpTransport::Io::kOk:
        c->in.append(buffer_, got);
        turn += got;
        continue;
      case HttpTransport::Io::kWantRead:
        return SetEvents(c, EPOLLIN | EPOLLRDHUP);
      case HttpTransport::Io::kWantWrite:
        return SetEvents(c, EPOLLOUT);
      case HttpTransport::Io::kClosed:
        return Close(c);
    }
  }
}

bool HttpFront::Loop::CountBody(Conn* c, size_t announced) {
  const size_t size = std::max(c->parser.request().body.size(), announced);
  if (size <= c->body_counted) return true;
  buffered_ += size - c->body_counted;
  c->body_counted = size;
  return buffered_ <= std::max(options_.max_buffered_body_bytes, options_.limits.max_body_bytes);
}

void HttpFront::Loop::UncountBody(Conn* c) {
  buffered_ -= c->body_counted;
  c->body_counted = 0;
}

void HttpFront::Loop::Busy(Conn* c) {
  UncountBody(c);
  Respond(c, handlers_.error(503, "the server holds too many request bodies; retry later"),
          /*close=*/true);
}

void HttpFront::Loop::Dispatch(Conn* c) {
  const HttpRequest& request = c->parser.request();
  if (std::optional<HttpResponse> response = handlers_.route(request)) {
    return Respond(c, *response, !request.keep_alive);
  }
  c->phase = Phase::kHandling;
  SetEvents(c, 0);  // the handler owns it now
  absl::MutexLock lock(&mutex_);
  queue_.push_back(c);
}

void HttpFront::Loop::Respond(Conn* c, const HttpResponse& response, bool close) {
  const HttpRequest& request = c->parser.request();
  c->out = ResponseHead(response, static_cast<int64_t>(response.body.size()), close,
                        request.minor_version, handlers_, request);
  if (request.method != "HEAD") c->out += response.body;
  c->out_sent = 0;
  c->close_after = close;
  c->phase = Phase::kWriting;
  c->deadline = absl::Now() + options_.write_timeout;
  Flush(c);
}

void HttpFront::Loop::Flush(Conn* c) {
  while (c->out_sent < c->out.size()) {
    size_t sent = 0;
    switch (c->io.Write(absl::string_view(c->out).substr(c->out_sent), &sent)) {
      case HttpTransport::Io::kOk:
        c->out_sent += sent;
        continue;
      case HttpTransport::Io::kWantWrite:
        return SetEvents(c, EPOLLOUT);
      case HttpTransport::Io::kWantRead:
        return SetEvents(c, EPOLLIN);
      case HttpTransport::Io::kClosed:
        return Close(c);
    }
  }
  std::string().swap(c->out);
  c->out_sent = 0;
  if (c->close_after) return StartLinger(c);
  NextRequest(c);
}

void HttpFront::Loop::NextRequest(Conn* c) {
  UncountBody(c);
  c->parser.Reset();
  c->head_checked = false;
  c->phase = Phase::kIdle;
  c->idle_since = absl::Now();
  c->deadline = c->idle_since + options_.idle_timeout;
  SetEvents(c, EPOLLIN | EPOLLRDHUP);
  ready_.push_back(c->id);  // a pipelined request may be read already (or held by TLS)
}

void HttpFront::Loop::StartLinger(Conn* c) {
  UncountBody(c);
  c->parser.Reset();  // frees the body
  c->io.ShutdownWrite();
  std::string().swap(c->in);
  c->phase = Phase::kLingering;
  c->deadline = absl::Now() + std::min(kLinger, options_.request_timeout);
  c->lingered = 0;
  SetEvents(c, EPOLLIN | EPOLLRDHUP);
  Linger(c);
}

void HttpFront::Loop::Linger(Conn* c) {
  for (size_t turn = 0;;) {
    if (turn >= kReadBytesPerTurn) {
      ready_.push_back(c->id);
      return;
    }
    size_t got = 0;
    switch (c->io.Read(buffer_, sizeof(buffer_), &got)) {
      case HttpTransport::Io::kOk:
        c->lingered += got;
        turn += got;
        if (c->lingered > kLingerBytes) return Close(c);
        continue;
      case HttpTransport::Io::kWantRead:
      case HttpTransport::Io::kWantWrite:
        return;
      case HttpTransport::Io::kClosed:
        return Close(c);
    }
  }
}

void HttpFront::Loop::Close(Conn* c) {
  UncountBody(c);
  SetEvents(c, 0);
  if (auto it = per_address_.find(c->address); it != per_address_.end() && --it->second <= 0) {
    per_address_.erase(it);
  }
  conns_.erase(c->id);  // closes the socket
  connections_ = static_cast<int>(conns_.size());
}

void HttpFront::Loop::SetEvents(Conn* c, uint32_t events) {
  if (events == c->events) return;
  epoll_event event = Event(events, c->id);
  if (events == 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->io.fd(), nullptr);
  } else {
    epoll_ctl(epoll_fd_, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->io.fd(), &event);
  }
  c->events = events;
}

void HttpFront::Loop::Sweep() {
  const absl::Time now = absl::Now();
  std::vector<uint64_t> late;
  for (auto& [id, c] : conns_) {
    if (c->phase != Phase::kHandling && now >= c->deadline) late.push_back(id);
  }
  for (uint64_t id : late) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Conn* c = it->second.get();
    if (c->phase == Phase::kReading) {
      Respond(c,
              handlers_.error(408, absl::StrCat("the request was not sent within ",
                                                absl::FormatDuration(options_.request_timeout))),
              /*close=*/true);
    } else {
      Close(c);
    }
  }
}

absl::StatusOr<std::unique_ptr<HttpFront>> HttpFront::Start(const HttpFrontOptions& options,
                                                            Handlers handlers) {
  SslCtx ctx;
  if (!options.tls_cert.empty()) {
    absl::StatusOr<SslCtx> made = NewServerSslCtx(options.tls_cert, options.tls_key);
    if (!made.ok()) return made.status();
    ctx = *std::move(made);
  }
  absl::StatusOr<std::pair<int, int>> listening = Listen(options.host, options.port);
  if (!listening.ok()) return listening.status();
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
  // Room for max_connections descriptors besides the process's others (within the hard
  // limit; past it, accepting pauses and idle connections go first).
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const rlim_t want = static_cast<rlim_t>(options.max_connections) + 1024;
    if (files.rlim_cur < want) {
      files.rlim_cur = std::min(want, files.rlim_max);
      setrlimit(RLIMIT_NOFILE, &files);
    }
  }
  auto loop = std::make_unique<Loop>(options, std::move(handlers), std::move(ctx), listening->first,
                                     listening->second);
  loop->Start();
  return std::unique_ptr<HttpFront>(new HttpFront(std::move(loop)));
}

HttpFront::HttpFront(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}
HttpFront::~HttpFront() { Stop(); }
int HttpFront::port() const { return loop_->port(); }
int HttpFront::connections() const { return loop_->connections(); }
void HttpFront::Stop() { loop_->Stop(); }

}  // namespace tandem
