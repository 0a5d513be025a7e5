#include "daemon/ha/standby_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/net/leader_redirect.h"

namespace clusterd {

grpc::ServerGenericBidiReactor* StandbyServer::RedirectService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  class Redirect : public grpc::ServerGenericBidiReactor {
   public:
    Redirect(grpc::GenericCallbackServerContext* context, const LeaderView& view) {
      const std::string& leader = view.address;
      // Present, empty or not, the key says "a standby answered".
      context->AddTrailingMetadata(kLeaderMetadataKey, leader);
      if (leader.empty() && !view.why_none.empty()) {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("this head stands by: {}: try another head, or again in a moment", view.why_none)));
        return;
      }
      if (leader.empty()) {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "this head stands by and knows of no leader yet (the heads are electing one): try "
                            "another head, or again in a moment"));
        return;
      }
      Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          fmt::format("this head stands by; the leader is at {} (give every head: --address "
                                      "H1:PORT,H2:PORT, and the client follows the leader)",
                                      leader)));
    }
    void OnDone() override { delete this; }
  };
  return new Redirect(context, leader_());
}

Result<std::unique_ptr<StandbyServer>> StandbyServer::Start(const Options& options, LeaderFn leader,
                                                            grpc::Service* also) {
  std::unique_ptr<StandbyServer> standby(new StandbyServer(std::move(leader)));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options.key_pem, options.cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  const std::string address = fmt::format("{}:{}", options.bind_ip, options.port);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.bind_wait_ms);
  while (true) {
    grpc::ServerBuilder builder;
    int bound = 0;
    // gRPC would share the port with another listener (SO_REUSEPORT): a
    // second head on this port must fail to start, not split its calls.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(address, credentials, &bound);
    if (also) builder.RegisterService(also);
    builder.RegisterCallbackGenericService(&standby->service_);
    standby->server_ = builder.BuildAndStart();
    if (standby->server_ && bound != 0) return standby;
    if (standby->server_) standby->server_->Shutdown();
    standby->server_.reset();
    if (std::chrono::steady_clock::now() >= give_up) {
      return Status::Unavailable(fmt::format("a standby head cannot listen on {}: the port is in use", address));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

StandbyServer::~StandbyServer() { Stop(); }

void StandbyServer::Stop() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_->Wait();
  server_.reset();
}

}  // namespace clusterd
