// TLS for every gRPC connection to the head (DESIGN rule 8), built in this
// one place: the head serves with its certificate and key; everything that
// dials the head (clusterctl, node agents, their blob and tree transfers)
// verifies it against the CA. TLS is off when no file is given.
// The cluster token still authenticates callers; TLS keeps it, and
// everything else, off the wire in clear and proves who the head is.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace clusterd {

struct TlsConfig {
  // Paths as given (for messages, the session file and the join banner).
  std::string cert_path, key_path, ca_path;
  // Their contents, read once at start, so no later dial can fail to read them.
  std::string cert_pem, key_pem, ca_pem;
  // Dialing the head by another name than the certificate's (the head's
  // own agent dials 127.0.0.1; its certificate names the head's address).
  std::string target_name_override;

  bool on() const { return !ca_pem.empty(); }
};

// Reads the files. Either none, or: a head gives cert and key (and its CA;
// without one, the certificate is taken as its own CA, as a self-signed one
// is); a worker or client gives the CA alone. The error names the flag.
Result<TlsConfig> LoadTls(const std::string& cert_path, const std::string& key_path, const std::string& ca_path);


// A channel to the head at `address`, over TLS verified against tls's CA when it is on.
std::shared_ptr<grpc::Channel> DialHead(const std::string& address, const TlsConfig& tls,
                                        grpc::ChannelArguments arguments = {});

// One line for a head that could not be reached, saying what TLS has to do
// with it: "cannot reach the head at ADDR over TLS: ..." with the likely cause.
std::string UnreachableHead(const std::string& address, const TlsConfig& tls, const std::string& grpc_message);

}  // namespace clusterd
