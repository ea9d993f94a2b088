// One client connection's byte stream for the HTTP front (http_front.h): a non-blocking
// socket, with TLS (OpenSSL) over it when the front serves HTTPS. The front's event loop
// uses the non-blocking calls; a handler thread, which owns the connection while it writes
// a response, uses WriteAll, which waits for the socket with poll(2) up to a deadline.
//
// Not thread-safe, except ClientGone(): one thread at a time uses a transport (the front
// hands a connection between its loop and its handler threads under a lock).
#ifndef TANDEM_SERVICES_COORDINATOR_HTTP_TRANSPORT_H_
#define TANDEM_SERVICES_COORDINATOR_HTTP_TRANSPORT_H_

#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tandem {

// An OpenSSL server context from PEM files (TLS 1.2 or later).
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;
// kInvalidArgument when the files cannot be read or do not match.
absl::StatusOr<SslCtx> NewServerSslCtx(const std::string& cert_file, const std::string& key_file);

class HttpTransport {
 public:
  enum class Io { kOk, kWantRead, kWantWrite, kClosed };

  // Owns `fd` (non-blocking); with `ctx`, serves TLS over it.
  HttpTransport(int fd, SSL_CTX* ctx);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  int fd() const { return fd_; }
  // The TLS handshake, one step (kOk once done; plaintext: kOk at once).
  Io Handshake();
  // kOk with *n > 0 bytes, kClosed at the end of the stream or an error.
  Io Read(char* buffer, size_t capacity, size_t* n);
  // kOk with *n > 0 bytes written.
  Io Write(absl::string_view data, size_t* n);
  // Writes all of `data`, waiting for the socket up to `deadline`; false when the client is
  // gone, the deadline passed or `stop` became true.
  bool WriteAll(absl::string_view data, absl::Time deadline, const std::atomic<bool>& stop);
  // Whether the client closed or reset the connection (poll(2) with no wait; any thread).
  bool ClientGone() const;
  // No more writes: TLS close_notify (best effort), then a TCP FIN.
  void ShutdownWrite();

 private:
  Io SslResult(int ret);

  int fd_;
  bool tls_;
  SSL* ssl_ = nullptr;
  bool handshake_done_ = false;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_HTTP_TRANSPORT_H_
