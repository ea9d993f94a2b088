// TLS for Tandem's gRPC listeners and channels, from PEM files named by flags, built with
// gRPC's own SSL credentials (no crypto of ours):
//
//   server side   --tls-cert/--tls-key serve TLS; with --tls-ca as well the listener requires
//                 a client certificate signed by that CA (mutual TLS) and refuses other clients
//                 during the handshake, before any call.
//   client side   --tls-ca is the root the server's certificate must chain to (its name is
//                 checked against the address dialled); a certificate and key, when given,
//                 are presented to a server that asks for one.
//
// Nothing given: plaintext (InsecureServerCredentials / InsecureChannelCredentials), which
// Tandem uses only on the loopback addresses it binds by default.
#ifndef TANDEM_WIRE_TLS_CREDENTIALS_H_
#define TANDEM_WIRE_TLS_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace tandem {

// Paths of PEM files; empty: not given.
struct TlsFiles {
  std::string cert;  // certificate chain, leaf first
  std::string key;   // its private key
  std::string ca;    // the CA certificate(s) the peer's certificate must chain to
};

// The PEM texts of TlsFiles, read and shape-checked.
struct TlsPem {
  std::string cert;
  std::string key;
  std::string ca;
};

// Reads the files given. kInvalidArgument when a certificate comes without its key or the
// other way round, or a file holds no PEM block of the expected kind; the ReadSmallFile codes
// when one cannot be read. Each message names the flag (`flag_prefix` + "cert", ...) and path.
absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files,
                                    const std::string& flag_prefix = "--tls-");

// For a listener: insecure without a certificate; TLS with one; mutual TLS (a client
// certificate signed by `ca` required and verified) when `ca` is given too. With
// `client_name` as well, every call is UNAUTHENTICATED unless the client certificate names it
// (its common name or a subjectAltName): of all the certificates the CA signs, only that
// peer's is taken. kInvalidArgument for a CA without a certificate (a plaintext listener
// cannot check client certificates) or a client name without a CA.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const TlsPem& pem, const std::string& client_name = "");

// For a channel: insecure without `ca`; TLS verifying the server against `ca` with it,
// presenting `cert`/`key` when given.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const TlsPem& pem);

// Always TLS: as ChannelCredentialsFor, but without `ca` the server is verified against gRPC's
// default roots (the system's), as a public endpoint needs.
std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const TlsPem& pem);

}  // namespace tandem

#endif  // TANDEM_WIRE_TLS_CREDENTIALS_H_
