#include "common/net/tls.h"

#include <grpcpp/create_channel.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <limits.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

namespace {

Result<std::string> ReadPem(const std::string& flag, const std::string& path) {
  auto text = ReadFileTrimmed(path);
  if (!text.ok() || text->empty()) return Status::InvalidArgument(fmt::format("{} {}: cannot read the file", flag, path));
  return *text + "\n";
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

// OpenSSL objects, freed however we leave.
struct Bio {
  explicit Bio(const std::string& pem) : bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))) {}
  ~Bio() { BIO_free(bio); }
  BIO* bio;
};

bool IsCertificate(const std::string& pem) {
  Bio in(pem);
  X509* cert = PEM_read_bio_X509(in.bio, nullptr, nullptr, nullptr);
  X509_free(cert);
  return cert != nullptr;
}

// Whether the key is the private half of the certificate's public key.
bool KeyFitsCertificate(const std::string& cert_pem, const std::string& key_pem) {
  Bio cert_in(cert_pem), key_in(key_pem);
  X509* cert = PEM_read_bio_X509(cert_in.bio, nullptr, nullptr, nullptr);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_in.bio, nullptr, nullptr, nullptr);
  bool fits = cert && key && X509_check_private_key(cert, key) == 1;
  EVP_PKEY_free(key);
  X509_free(cert);
  return fits;
}

// "" where the certificate is valid now, else why not, with the date.
// Checked so that a head with an expired certificate does not start, with
// every client told only that it is "not signed by the CA".
std::string NotValidNow(const std::string& pem) {
  Bio in(pem);
  X509* cert = PEM_read_bio_X509(in.bio, nullptr, nullptr, nullptr);
  if (!cert) return "";
  auto date = [](const ASN1_TIME* time) {
    BIO* out = BIO_new(BIO_s_mem());
    ASN1_TIME_print(out, time);
    char* text = nullptr;
    const long length = BIO_get_mem_data(out, &text);
    std::string printed(text, static_cast<size_t>(length));
    BIO_free(out);
    return printed;
  };
  std::string why;
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    why = "it expired on " + date(X509_get0_notAfter(cert));
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    why = "it is not valid before " + date(X509_get0_notBefore(cert));
  }
  X509_free(cert);
  return why;
}

}  // namespace

Result<TlsConfig> LoadTls(const std::string& cert_path, const std::string& key_path, const std::string& ca_path) {
  TlsConfig tls;
  if (cert_path.empty() != key_path.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together: give both, or neither");
  }
  // Absolute, as the session file and the join banner show them.
  tls.cert_path = Absolute(cert_path);
  tls.key_path = Absolute(key_path);
  tls.ca_path = Absolute(ca_path.empty() ? cert_path : ca_path);
  if (tls.ca_path.empty()) return tls;  // plaintext
  if (!cert_path.empty()) {
    ASSIGN_OR_RETURN(tls.cert_pem, ReadPem("--tls-cert", cert_path));
    ASSIGN_OR_RETURN(tls.key_pem, ReadPem("--tls-key", key_path));
    if (!IsCertificate(tls.cert_pem)) {
      return Status::InvalidArgument(fmt::format("--tls-cert {}: not a PEM certificate", cert_path));
    }
    if (!KeyFitsCertificate(tls.cert_pem, tls.key_pem)) {
      return Status::InvalidArgument(fmt::format(
          "--tls-key {}: not a PEM private key, or not the key of the certificate in {}", key_path, cert_path));
    }
    if (std::string why = NotValidNow(tls.cert_pem); !why.empty()) {
      return Status::InvalidArgument(fmt::format("--tls-cert {}: {}", cert_path, why));
    }
  }
  const char* ca_flag = ca_path.empty() ? "--tls-cert" : "--tls-ca";
  ASSIGN_OR_RETURN(tls.ca_pem, ReadPem(ca_flag, tls.ca_path));
  if (!IsCertificate(tls.ca_pem)) {
    return Status::InvalidArgument(fmt::format("{} {}: not a PEM certificate", ca_flag, tls.ca_path));
  }
  return tls;
}

std::shared_ptr<grpc::Channel> DialHead(const std::string& address, const TlsConfig& tls,
                                        grpc::ChannelArguments arguments) {
  if (!tls.on()) return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  if (!tls.target_name_override.empty()) arguments.SetSslTargetNameOverride(tls.target_name_override);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), arguments);
}

std::string UnreachableHead(const std::string& address, const TlsConfig& tls, const std::string& grpc_message) {
  auto says = [&](const char* text) { return grpc_message.find(text) != std::string::npos; };
  if (!tls.on()) {
    // A TLS head hangs up on a plaintext client without a word.
    std::string hint = says("Socket closed") || says("Connection reset")
                           ? " (if the head uses TLS, give its CA with --tls-ca or CLUSTER_TLS_CA)"
                           : "";
    return fmt::format("cannot reach a clusterd head at {}: {}{}", address, grpc_message, hint);
  }
  std::string why = grpc_message;
  if (says("certificate verify failed")) {
    why = fmt::format("the head's certificate was not signed by the CA in {} (or it has expired)", tls.ca_path);
  } else if (says("not in peer certificate")) {
    why = fmt::format("the head's certificate does not name the host of {} (its subjectAltName must)", address);
  } else if (says("wrong version number")) {
    why = "the head does not speak TLS (it was started without --tls-cert and --tls-key)";
  }
  return fmt::format("cannot reach the head at {} over TLS: {}", address, why);
}

}  // namespace clusterd
