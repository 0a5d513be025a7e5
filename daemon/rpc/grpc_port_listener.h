// The head's gRPC port, accepted by clusterd rather than by gRPC, so that
// connections that never prove the token are bounded (connection_gate.h)
// and accept can never fail for good (descriptor_reserve.h). gRPC stops
// accepting on a port after one failed accept; here a failure is handled
// and the next connection is taken.
//
// A connection is handed to gRPC as it is accepted
// (grpc::AddInsecureChannelFromFd) and stays counted as unproven until a
// call on it passes the token check (PeerProvedToken, called by
// CheckToken's observer); one that has not by unproven_timeout_ms is ended.
// It is not held back until its first bytes: a gRPC client may wait for
// the server's SETTINGS before it writes, and would time out.
//
// gRPC 1.51 takes a connection from a descriptor only as plaintext: with
// TLS, the connection goes through a TlsBridge (tls_bridge.h) and gRPC is
// handed the bridge's plaintext end, counted the same way.
// Thread-safe: one thread accepts; PeerProvedToken comes from gRPC's.
#pragma once

#include <grpcpp/server.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "daemon/rpc/connection_gate.h"
#include "daemon/rpc/descriptor_reserve.h"
#include "daemon/rpc/tls_bridge.h"

namespace clusterd {

class GrpcPortListener {
 public:
  // `tls`: terminates TLS before gRPC; null for plaintext. REQUIRES: it
  // outlives the listener.
  explicit GrpcPortListener(PortGuard guard, TlsBridge* tls = nullptr);
  ~GrpcPortListener();  // Stop()
  GrpcPortListener(const GrpcPortListener&) = delete;
  GrpcPortListener& operator=(const GrpcPortListener&) = delete;

  // Binds ip:port (0: any free port) without taking connections yet. The
  // error names the address.
  Status Bind(const std::string& ip, int port);
  int port() const { return port_; }
  // Starts taking connections and handing them to `server`, which must have
  // been started and outlive Stop().
  void Serve(grpc::Server* server);
  // Stops accepting; connections already handed to gRPC are gRPC's.
  void Stop();

  // A call on the connection gRPC names `peer` passed the token check.
  void PeerProvedToken(const std::string& peer);

  // For tests and the status line: unproven connections now, and evicted since the start.
  int unproven() const;
  int64_t evicted() const;
  int64_t shed() const;

 private:
  struct HandedOver {
    ConnectionGate::Id id;
    uint64_t inode;
    int64_t since_ms;
  };
  void Run();
  void AcceptSome();
  // gRPC takes `fd` as connection `id`. REQUIRES: mutex_ not held.
  void GiveToGrpc(int fd, ConnectionGate::Id id);
  void Evict(const std::vector<ConnectionGate::Id>& ids);  // REQUIRES: mutex_
  void Sweep(int64_t now_ms);

  const PortGuard guard_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  DescriptorReserve reserve_;
  mutable std::mutex mutex_;
  ConnectionGate gate_;
  std::map<int, HandedOver> handed_;   // by descriptor, unproven ones only; under mutex_
  std::map<int, HandedOver> bridging_;  // TLS handshakes under way, by the client's descriptor; under mutex_
  TlsBridge* tls_;
  std::unordered_map<ConnectionGate::Id, int> fds_;  // both kinds' descriptors; under mutex_
  int64_t next_sweep_ms_ = 0;
  int64_t shed_ = 0;
};

// CheckToken's observer: every listener of this process hears of each
// connection that proved the token (a peer string names one connection).
void AddTokenObserver(GrpcPortListener* listener);
void RemoveTokenObserver(GrpcPortListener* listener);

}  // namespace clusterd
