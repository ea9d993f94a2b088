#include "services/coordinator/http_transport.h"

#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace tandem {

absl::StatusOr<SslCtx> NewServerSslCtx(const std::string& cert_file, const std::string& key_file) {
  SslCtx ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr || SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("cannot serve HTTPS with --tls-cert '",
                                                   cert_file, "' and --tls-key '", key_file,
                                                   "' (not a matching pair?)"));
  }
  // Partial writes from a moving buffer (the loop's and the handlers' write loops), and no
  // read/write buffers kept by an idle connection.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  return ctx;
}

HttpTransport::HttpTransport(int fd, SSL_CTX* ctx) : fd_(fd), tls_(ctx != nullptr) {
  if (ctx == nullptr) return;
  ssl_ = SSL_new(ctx);
  if (ssl_ != nullptr) {
    SSL_set_fd(ssl_, fd_);
    SSL_set_accept_state(ssl_);
  }
}

HttpTransport::~HttpTransport() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  close(fd_);
}

HttpTransport::Io HttpTransport::SslResult(int ret) {
  const int error = SSL_get_error(ssl_, ret);
  ERR_clear_error();  // the error queue is per thread: leave nothing for the next call
  if (error == SSL_ERROR_WANT_READ) return Io::kWantRead;
  if (error == SSL_ERROR_WANT_WRITE) return Io::kWantWrite;
  return Io::kClosed;
}

HttpTransport::Io HttpTransport::Handshake() {
  if (!tls_) handshake_done_ = true;
  if (handshake_done_) return Io::kOk;
  if (ssl_ == nullptr) return Io::kClosed;  // SSL_new failed
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    handshake_done_ = true;
    return Io::kOk;
  }
  return SslResult(ret);
}

HttpTransport::Io HttpTransport::Read(char* buffer, size_t capacity, size_t* n) {
  *n = 0;
  if (ssl_ != nullptr) {
    const int ret = SSL_read(ssl_, buffer, static_cast<int>(std::min<size_t>(capacity, 1 << 30)));
    if (ret > 0) {
      *n = static_cast<size_t>(ret);
      return Io::kOk;
    }
    return SslResult(ret);
  }
  for (;;) {
    const ssize_t got = recv(fd_, buffer, capacity, 0);
    if (got > 0) {
      *n = static_cast<size_t>(got);
      return Io::kOk;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kWantRead;
    return Io::kClosed;
  }
}

HttpTransport::Io HttpTransport::Write(absl::string_view data, size_t* n) {
  *n = 0;
  if (data.empty()) return Io::kOk;
  if (ssl_ != nullptr) {
    const int ret =
        SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
    if (ret > 0) {
      *n = static_cast<size_t>(ret);
      return Io::kOk;
    }
    return SslResult(ret);
  }
  for (;;) {
    const ssize_t sent = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      *n = static_cast<size_t>(sent);
      return Io::kOk;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kWantWrite;
    return Io::kClosed;
  }
}

bool HttpTransport::WriteAll(absl::string_view data, absl::Time deadline,
                             const std::atomic<bool>& stop) {
  while (!data.empty()) {
    size_t n = 0;
    const Io io = Write(data, &n);
    if (io == Io::kClosed) return false;
    data.remove_prefix(n);
    if (io == Io::kOk) continue;
    // Wait for the socket in slices, so that a stop is seen within 100 ms.
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration() || stop) return false;
    pollfd p{fd_, static_cast<short>(io == Io::kWantRead ? POLLIN : POLLOUT), 0};
    const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 100));
    if (poll(&p, 1, ms) < 0 && errno != EINTR) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  }
  return true;
}

bool HttpTransport::ClientGone() const {
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void HttpTransport::ShutdownWrite() {
  if (ssl_ != nullptr && handshake_done_) {
    SSL_shutdown(ssl_);  // one non-blocking try: the close_notify alert
    ERR_clear_error();
  }
  shutdown(fd_, SHUT_WR);
}

}  // namespace tandem
