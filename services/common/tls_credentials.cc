#include "services/common/tls_credentials.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "services/common/small_file.h"

namespace tandem {
namespace {

// Reads `path` (the value of flag `flag`) and checks it holds a PEM block whose label ends in
// `label`: "CERTIFICATE", or "PRIVATE KEY" for any of PKCS#8, RSA and EC keys.
absl::StatusOr<std::string> ReadPem(const std::string& path, const std::string& flag,
                                    absl::string_view label) {
  ASSIGN_OR_RETURN(std::string pem, ReadSmallFile(path, flag));
  const size_t begin = pem.find("-----BEGIN ");
  const size_t end = begin == std::string::npos ? begin : pem.find("-----", begin + 11);
  if (end == std::string::npos ||
      !absl::EndsWith(absl::string_view(pem).substr(begin + 11, end - begin - 11), label)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " '", path, "' holds no PEM ", label,
                                                   " (-----BEGIN ... ", label, "-----)"));
  }
  return pem;
}

}  // namespace

absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files, const std::string& flag_prefix) {
  const std::string cert_flag = flag_prefix + "cert";
  const std::string key_flag = flag_prefix + "key";
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError(files.cert.empty()
                                          ? absl::StrCat(key_flag, " needs ", cert_flag)
                                          : absl::StrCat(cert_flag, " needs ", key_flag));
  }
  TlsPem pem;
  if (!files.cert.empty()) {
    ASSIGN_OR_RETURN(pem.cert, ReadPem(files.cert, cert_flag, "CERTIFICATE"));
    ASSIGN_OR_RETURN(pem.key, ReadPem(files.key, key_flag, "PRIVATE KEY"));
  }
  if (!files.ca.empty()) {
    ASSIGN_OR_RETURN(pem.ca, ReadPem(files.ca, flag_prefix + "ca", "CERTIFICATE"));
  }
  return pem;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const TlsPem& pem) {
  if (pem.cert.empty()) {
    if (!pem.ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls-ca needs --tls-cert and --tls-key: client certificates are checked only "
          "over TLS");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(
      pem.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                     : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = pem.ca;
  options.pem_key_cert_pairs.push_back({pem.key, pem.cert});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const TlsPem& pem) {
  if (pem.ca.empty()) return grpc::InsecureChannelCredentials();
  return TlsChannelCredentials(pem);
}

std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const TlsPem& pem) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem.ca;
  options.pem_private_key = pem.key;
  options.pem_cert_chain = pem.cert;
  return grpc::SslCredentials(options);
}

}  // namespace tandem
