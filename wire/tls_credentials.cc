#include "wire/tls_credentials.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "wire/small_file.h"

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

// Takes a call only from a peer whose verified certificate names `name`. Runs inline on the
// call's thread (a few string compares).
class PeerNameCheck final : public grpc::AuthMetadataProcessor {
 public:
  explicit PeerNameCheck(std::string name) : name_(std::move(name)) {}
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata&, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    if (context != nullptr && context->IsPeerAuthenticated()) {
      for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
        for (const grpc::string_ref& value : context->FindPropertyValues(property)) {
          if (absl::string_view(value.data(), value.size()) == name_) return grpc::Status::OK;
        }
      }
    }
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the client certificate does not name '" + name_ + "' (--tls-client-name)");
  }

 private:
  const std::string name_;
};

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

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const TlsPem& pem, const std::string& client_name) {
  if (!client_name.empty() && pem.ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-name needs --tls-ca: only a verified client certificate names a peer");
  }
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
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(options);
  if (!client_name.empty()) {
    credentials->SetAuthMetadataProcessor(std::make_shared<PeerNameCheck>(client_name));
  }
  return credentials;
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
