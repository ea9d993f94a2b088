// The HTTP front over real loopback sockets: each limit and each malformed shape with its
// exact status and a closed connection, the deadlines, the connection bounds, the key check
// before the body, keep-alive and pipelining, chunked responses, and a client that leaves.
#include "services/coordinator/http_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

// A blocking loopback client from `source` (any 127.0.0.0/8 address).
class Client {
 public:
  explicit Client(int port, const char* source = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  }
  ~Client() { close(fd_); }

  // False when the server has closed (or reset) the connection.
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Reads until `done(received)` or the server closes or `timeout` passes.
  std::string ReadUntil(const std::function<bool(const std::string&)>& done,
                        absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time end = absl::Now() + timeout;
    while (!done(received_) && !closed_) {
      const absl::Duration left = end - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) break;
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_ = true;
      } else {
        received_.append(buffer, static_cast<size_t>(n));
      }
    }
    return received_;
  }
  // One whole response (head and Content-Length body), taken from what was received.
  std::string Response(absl::Duration timeout = absl::Seconds(5)) {
    ReadUntil([](const std::string& r) { return Complete(r) > 0; }, timeout);
    const size_t n = Complete(received_);
    if (n == 0) return "";
    std::string response = received_.substr(0, n);
    received_.erase(0, n);
    return response;
  }
  // Whether the server closes the connection within `timeout`.
  bool ClosedWithin(absl::Duration timeout) {
    ReadUntil([](const std::string&) { return false; }, timeout);
    return closed_;
  }
  bool closed() const { return closed_; }
  int fd() const { return fd_; }

  // The length of the first complete response in `r` (0: not complete).
  static size_t Complete(const std::string& r) {
    size_t head = r.find("\r\n\r\n");
    if (head == std::string::npos) return 0;
    if (absl::StartsWith(r, "HTTP/1.1 100 ")) {  // an interim response, then the real one
      const size_t rest = Complete(r.substr(head + 4));
      return rest == 0 ? 0 : head + 4 + rest;
    }
    size_t length = 0;
    const size_t at = r.find("Content-Length: ");
    if (at != std::string::npos && at < head) {
      (void)absl::SimpleAtoi(r.substr(at + 16, r.find("\r\n", at) - at - 16), &length);
    }
    return r.size() >= head + 4 + length ? head + 4 + length : 0;
  }

 private:
  int fd_;
  std::string received_;
  bool closed_ = false;
};

int StatusOf(const std::string& response) {
  int status = 0;
  if (absl::StartsWith(response, "HTTP/1.1 "))
    (void)absl::SimpleAtoi(response.substr(9, 3), &status);
  return status;
}

class HttpFrontTest : public ::testing::Test {
 protected:
  void StartFront(HttpFrontOptions options) {
    HttpFront::Handlers handlers;
    handlers.check_head = [](const HttpRequest& r) -> std::optional<HttpResponse> {
      if (r.path != "/secret" || r.Header("authorization") == "Bearer k") return std::nullopt;
      HttpResponse refused;
      refused.status = 401;
      refused.body = "no key";
      return refused;
    };
    handlers.route = [](const HttpRequest& r) -> std::optional<HttpResponse> {
      if (r.path == "/echo" || r.path == "/stream" || r.path == "/wait" || r.path == "/secret") {
        return std::nullopt;
      }
      HttpResponse response;
      response.status = r.path == "/health" ? 200 : 404;
      response.content_type = "text/plain";
      response.body = r.path == "/health" ? "ok" : "no route";
      return response;
    };
    handlers.handle = [this](const HttpRequest& r, HttpExchange& exchange) {
      if (r.path == "/stream") {
        HttpResponse head;
        head.content_type = "text/event-stream";
        exchange.Start(head);
        for (const char* piece : {"one", "two", "three"}) exchange.Write(piece);
        exchange.End();
        return;
      }
      if (r.path == "/wait") {  // until the client leaves (at most 5 s)
        waiting_ = true;
        const absl::Time end = absl::Now() + absl::Seconds(5);
        while (!exchange.ClientGone() && absl::Now() < end) absl::SleepFor(absl::Milliseconds(5));
        client_gone_ = exchange.ClientGone();
        waiting_ = false;
        return;
      }
      HttpResponse response;
      response.body = r.body;
      exchange.Respond(response);
    };
    handlers.error = [](int status, const std::string& message) {
      HttpResponse response;
      response.status = status;
      response.body = message;
      return response;
    };
    absl::StatusOr<std::unique_ptr<HttpFront>> front = HttpFront::Start(options, handlers);
    ASSERT_TRUE(front.ok()) << front.status();
    front_ = *std::move(front);
  }
  static HttpFrontOptions Small() {
    HttpFrontOptions options;
    options.limits.max_header_bytes = 1024;
    options.limits.max_header_count = 8;
    options.limits.max_body_bytes = 64;
    options.request_timeout = absl::Seconds(1);
    options.idle_timeout = absl::Seconds(1);
    options.max_connections = 8;
    options.max_connections_per_address = 4;
    options.threads = 2;
    return options;
  }

  std::unique_ptr<HttpFront> front_;
  std::atomic<bool> waiting_{false};
  std::atomic<bool> client_gone_{false};
};

struct Shape {
  const char* name;
  std::string bytes;
  int status;
};

const std::string kPost = "POST /echo HTTP/1.1\r\nHost: h\r\n";

class MalformedShapeTest : public HttpFrontTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(MalformedShapeTest, IsAnsweredWithItsStatusThenClosed) {
  StartFront(Small());
  Client client(front_->port());
  client.Send(GetParam().bytes);
  const std::string response = client.Response();
  EXPECT_EQ(StatusOf(response), GetParam().status) << GetParam().name << ": " << response;
  EXPECT_TRUE(absl::StrContains(response, "Connection: close\r\n")) << response;
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(3))) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MalformedShapeTest,
    ::testing::Values(
        Shape{"two_content_lengths", kPost + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
              400},
        Shape{"two_equal_content_lengths",
              kPost + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nab", 400},
        Shape{"content_length_and_chunked",
              kPost + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        Shape{"no_colon", "GET /health HTTP/1.1\r\nHost h\r\n\r\n", 400},
        Shape{"nul", std::string("GET /health HTTP/1.1\r\nX: \0\r\n\r\n", 31), 400},
        Shape{"bare_cr", "GET /health HTTP/1.1\r\nX: a\rb\r\n\r\n", 400},
        Shape{"header_count",
              [] {
                std::string r = "GET /health HTTP/1.1\r\n";
                for (int i = 0; i < 9; ++i) absl::StrAppend(&r, "X-", i, ": 1\r\n");
                return r + "\r\n";
              }(),
              431},
        Shape{"header_bytes", "GET /health HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n",
              431},
        Shape{"request_line", "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n", 414},
        Shape{"content_length_over", kPost + "Content-Length: 65\r\n\r\n", 413},
        Shape{"chunked_over",
              kPost + "Transfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
                  "\r\n1\r\na\r\n" + std::string(100000, 'b'),
              413},
        Shape{"http2", "GET /health HTTP/2.0\r\n\r\n", 505}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

TEST_F(HttpFrontTest, KeepsAliveAndAnswersPipelinedRequestsInOrder) {
  StartFront(Small());
  Client client(front_->port());
  client.Send(kPost + "Content-Length: 3\r\n\r\nabc" + kPost +
              "Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n" +
              "GET /health HTTP/1.1\r\n\r\n");
  const std::string first = client.Response(), second = client.Response(),
                    third = client.Response();
  EXPECT_EQ(StatusOf(first), 200);
  EXPECT_TRUE(absl::EndsWith(first, "\r\n\r\nabc")) << first;
  EXPECT_TRUE(absl::EndsWith(second, "\r\n\r\ndef")) << second;
  EXPECT_TRUE(absl::EndsWith(third, "\r\n\r\nok")) << third;
  EXPECT_FALSE(client.closed());
}

TEST_F(HttpFrontTest, RefusesWithoutAKeyBeforeReadingTheBody) {
  StartFront(Small());
  Client client(front_->port());
  // The body announced is over the limit and never sent: 401, not 413, and at once.
  client.Send("POST /secret HTTP/1.1\r\nContent-Length: 100000\r\n\r\n");
  const std::string response = client.Response(absl::Seconds(1));
  EXPECT_EQ(StatusOf(response), 401) << response;
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(3)));
  Client keyed(front_->port());
  keyed.Send("POST /secret HTTP/1.1\r\nAuthorization: Bearer k\r\nContent-Length: 100000\r\n\r\n");
  EXPECT_EQ(StatusOf(keyed.Response()), 413);
}

TEST_F(HttpFrontTest, AnswersContinueWhenTheBodyIsExpected) {
  StartFront(Small());
  Client client(front_->port());
  client.Send(kPost + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  client.ReadUntil([](const std::string& r) { return absl::StrContains(r, "\r\n\r\n"); });
  client.Send("hi");
  const std::string response = client.Response();
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"))
      << response;
  EXPECT_TRUE(absl::EndsWith(response, "hi")) << response;
}

TEST_F(HttpFrontTest, ADrippingRequestGets408AtTheWholeRequestDeadline) {
  HttpFrontOptions options = Small();
  options.limits.max_header_count = 64;
  StartFront(options);
  Client client(front_->port());
  const absl::Time start = absl::Now();
  client.Send("GET /health HTTP/1.1\r\n");
  for (int i = 0; i < 20 && !client.closed(); ++i) {  // one header line every 100 ms
    if (!client.Send(absl::StrCat("X-", i, ": 1\r\n"))) break;
    client.ReadUntil([](const std::string& r) { return !r.empty(); }, absl::Milliseconds(100));
  }
  const std::string response = client.Response();
  EXPECT_EQ(StatusOf(response), 408) << response;
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Milliseconds(1800));
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(3)));
}

TEST_F(HttpFrontTest, ASilentConnectionIsClosedAtTheIdleDeadline) {
  StartFront(Small());
  Client client(front_->port());
  const absl::Time start = absl::Now();
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(3)));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1800));
  EXPECT_EQ(client.ReadUntil([](const std::string&) { return true; }), "");  // no reply
}

TEST_F(HttpFrontTest, AnAddressOverItsBoundLosesItsOldestIdleConnectionFirst) {
  StartFront(Small());
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 2; ++i) {  // two requests in progress
    slow.push_back(std::make_unique<Client>(front_->port()));
    slow.back()->Send("GET /health HTTP/1.1\r\n");
  }
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(std::make_unique<Client>(front_->port()));
    absl::SleepFor(absl::Milliseconds(20));
  }
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_EQ(front_->connections(), 4);
  Client fifth(front_->port());  // the oldest idle one goes
  EXPECT_TRUE(idle[0]->ClosedWithin(absl::Seconds(1)));
  EXPECT_FALSE(idle[1]->ClosedWithin(absl::Milliseconds(100)));
  Client sixth(front_->port());
  EXPECT_TRUE(idle[1]->ClosedWithin(absl::Seconds(1)));
  fifth.Send("GET /health HTTP/1.1\r\n");
  sixth.Send("GET /health HTTP/1.1\r\n");
  absl::SleepFor(absl::Milliseconds(100));
  Client seventh(front_->port());  // none idle: the new one is refused
  EXPECT_TRUE(seventh.ClosedWithin(absl::Seconds(1)));
  for (auto& s : slow) EXPECT_FALSE(s->closed());
  // Another address is not bound by this one's.
  Client other(front_->port(), "127.0.0.2");
  other.Send("GET /health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(other.Response()), 200);
}

TEST_F(HttpFrontTest, TheServerOverItsBoundClosesIdleConnectionsFirst) {
  StartFront(Small());
  std::vector<std::unique_ptr<Client>> clients;
  const char* sources[] = {"127.0.0.2", "127.0.0.3"};
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<Client>(front_->port(), sources[i % 2]));
    if (i < 6) clients.back()->Send("GET /health HTTP/1.1\r\n");  // six slow, two idle
    absl::SleepFor(absl::Milliseconds(20));
  }
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_EQ(front_->connections(), 8);
  Client health(front_->port(), "127.0.0.4");
  EXPECT_TRUE(clients[6]->ClosedWithin(absl::Seconds(1)));
  health.Send("GET /health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(health.Response()), 200);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(clients[i]->closed()) << i;
}

TEST_F(HttpFrontTest, BodiesHeldTogetherPastTheBudgetAre503) {
  HttpFrontOptions options = Small();
  options.max_buffered_body_bytes = 100;
  StartFront(options);
  Client first(front_->port());
  first.Send(kPost + "Content-Length: 60\r\n\r\n" + std::string(30, 'a'));  // held, reading
  absl::SleepFor(absl::Milliseconds(50));
  Client second(front_->port(), "127.0.0.2");
  second.Send(kPost + "Content-Length: 60\r\n\r\n");
  EXPECT_EQ(StatusOf(second.Response()), 503);
  EXPECT_TRUE(second.ClosedWithin(absl::Seconds(3)));
  Client chunked(front_->port(), "127.0.0.3");  // chunked: counted as it comes
  chunked.Send(kPost + "Transfer-Encoding: chunked\r\n\r\n30\r\n" + std::string(48, 'b') + "\r\n");
  EXPECT_EQ(StatusOf(chunked.Response()), 503);
  first.Send(std::string(30, 'a'));  // the first completes; its body is let go
  EXPECT_EQ(StatusOf(first.Response()), 200);
  absl::SleepFor(absl::Milliseconds(50));  // the handler gives the connection back
  Client third(front_->port(), "127.0.0.4");
  third.Send(kPost + "Content-Length: 60\r\n\r\n" + std::string(60, 'c'));
  EXPECT_EQ(StatusOf(third.Response()), 200);
}

TEST_F(HttpFrontTest, StreamsAChunkedResponse) {
  StartFront(Small());
  Client client(front_->port());
  client.Send("POST /stream HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  const std::string r =
      client.ReadUntil([](const std::string& s) { return absl::EndsWith(s, "0\r\n\r\n"); });
  EXPECT_TRUE(absl::StrContains(r, "Transfer-Encoding: chunked\r\n")) << r;
  EXPECT_TRUE(absl::EndsWith(r, "\r\n\r\n3\r\none\r\n3\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n")) << r;
  // HTTP/1.0 has no chunks: the body, then the close.
  Client old(front_->port());
  old.Send("POST /stream HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(old.ClosedWithin(absl::Seconds(2)));
  EXPECT_TRUE(absl::EndsWith(old.ReadUntil([](const std::string&) { return true; }),
                             "\r\n\r\nonetwothree"));
}

TEST_F(HttpFrontTest, AHandlerSeesItsClientLeaveAndHealthStillAnswers) {
  HttpFrontOptions options = Small();
  options.threads = 1;
  StartFront(options);
  auto client = std::make_unique<Client>(front_->port());
  client->Send("POST /wait HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  for (int i = 0; i < 100 && !waiting_; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(waiting_);
  // The only handler thread is busy: /health is answered by the loop all the same.
  Client health(front_->port(), "127.0.0.2");
  const absl::Time start = absl::Now();
  health.Send("GET /health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(health.Response()), 200);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
  client.reset();  // the client leaves
  for (int i = 0; i < 100 && waiting_; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(waiting_);
  EXPECT_TRUE(client_gone_);
}

TEST_F(HttpFrontTest, StopClosesEverythingAndReturns) {
  StartFront(Small());
  Client idle(front_->port());
  Client running(front_->port(), "127.0.0.2");
  running.Send("POST /wait HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  for (int i = 0; i < 100 && !waiting_; ++i) absl::SleepFor(absl::Milliseconds(10));
  const absl::Time start = absl::Now();
  front_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_TRUE(client_gone_);  // the handler was told
  EXPECT_TRUE(idle.ClosedWithin(absl::Seconds(1)));
  EXPECT_TRUE(running.ClosedWithin(absl::Seconds(1)));
}

}  // namespace
}  // namespace tandem
