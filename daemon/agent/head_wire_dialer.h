// The real HeadDialer: asks the head's gRPC port where its agent port is
// (Locate, on a fresh channel that goes after the call), then opens a
// HeadWire there, with errors named as a clusterctl call would get them.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/client_context.h>

#include "common/net/tls.h"
#include "daemon/agent/head_connection.h"

namespace clusterd {

class HeadWireDialer : public HeadDialer {
 public:
  struct Options {
    std::string head_address;  // host:port of the head's gRPC port
    std::string token;
    TlsConfig tls;
    // The gRPC channel's own connect backoff, for Locate.
    int reconnect_initial_ms = 0;
    int reconnect_max_ms = 0;
    int connect_timeout_ms = 0;  // one TCP connect's (the config's connect_timeout_ms)
  };
  explicit HeadWireDialer(Options options) : options_(std::move(options)) {}

  Result<std::unique_ptr<HeadConnection>> Dial() override;
  void Cancel() override;
  // After a Dial the head refused as a standby: the leader it named (""
  // when it named none), and whether it was a standby at all.
  std::string redirect() const;
  bool answered_as_standby() const;

 private:
  Result<int> LocateAgentPort();

  Options options_;
  mutable std::mutex mutex_;                       // guards the fields below
  grpc::ClientContext* locate_context_ = nullptr;  // while Locate is under way
  bool cancelled_ = false;
  std::string redirect_;
  bool standby_ = false;
};

}  // namespace clusterd
