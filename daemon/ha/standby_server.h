// What a standby head serves on the head's gRPC port: no state, only the
// way to the leader. Every call, whatever its service and method (but
// HaHeads', which lists the heads), is
// answered at once with FAILED_PRECONDITION naming the leader, its address
// in the trailing metadata kLeaderMetadataKey (common/net/leader_redirect.h)
// that clients and agents follow; while no leader is known, UNAVAILABLE,
// as a head that is away, so that they try another head, saying why none
// is known (the heads are electing one, or etcd does not answer).
// The token is not checked: a redirect tells nothing but where the leader is.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server.h>

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace clusterd {

class StandbyServer {
 public:
  // Who leads as this head sees it: the leader's host:port ("" when none
  // is known) and, when none is, why ("": the heads are electing one).
  struct LeaderView {
    std::string address;
    std::string why_none;
  };
  // Called from gRPC's threads.
  using LeaderFn = std::function<LeaderView()>;
  struct Options {
    std::string bind_ip;
    int port = 0;
    // TLS as the head serves it (PEM contents); empty: plaintext.
    std::string cert_pem, key_pem;
    // The port may still be held a moment by the head that served it: a
    // bind is tried again until this passes.
    int bind_wait_ms = 3000;
  };

  // `also`: a service served as it is beside the redirects (the heads'
  // list), or null. REQUIRES: it outlives the server.
  static Result<std::unique_ptr<StandbyServer>> Start(const Options& options, LeaderFn leader,
                                                      grpc::Service* also = nullptr);
  ~StandbyServer();  // Stop()
  StandbyServer(const StandbyServer&) = delete;
  StandbyServer& operator=(const StandbyServer&) = delete;

  // Stops answering and frees the port.
  void Stop();

 private:
  class RedirectService : public grpc::CallbackGenericService {
   public:
    explicit RedirectService(LeaderFn leader) : leader_(std::move(leader)) {}
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

   private:
    LeaderFn leader_;
  };

  explicit StandbyServer(LeaderFn leader) : service_(std::move(leader)) {}

  RedirectService service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace clusterd
