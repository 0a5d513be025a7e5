// chaos_flood: a connection flood on a head's two ports, as a stranger
// without the token makes it (run on the simulated client machine).
//   chaos_flood HOST PORT TOKEN CONNECTIONS HOLD_MS
// Opens CONNECTIONS connections to the gRPC port (half silent, half after
// HTTP/2's preface) and as many to the agent port (found with Locate),
// then, while they are held, makes one GetStatus call with the token: the
// head must answer it within 5 s. Prints one line:
//   flood: opened N, closed by the head M, status SERVED|UNSERVED (T ms)
// Exit 0 when the flood was made, 2 on bad arguments.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "agent.grpc.pb.h"
#include "cluster.grpc.pb.h"
#include "common/net/auth.h"
#include "connection_flood.h"

namespace {

template <typename Call>
bool WithDeadline(const std::string& token, Call call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  clusterd::AttachToken(&context, token);
  return call(&context).ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: chaos_flood HOST PORT TOKEN CONNECTIONS HOLD_MS\n";
    return 2;
  }
  const std::string host = argv[1], token = argv[3];
  const int port = std::atoi(argv[2]), connections = std::atoi(argv[4]), hold_ms = std::atoi(argv[5]);
  auto channel = grpc::CreateChannel(host + ":" + std::to_string(port), grpc::InsecureChannelCredentials());
  clusterd::AgentEndpoint endpoint;
  auto agents = clusterd::NodeAgentService::NewStub(channel);
  WithDeadline(token, [&](grpc::ClientContext* c) { return agents->Locate(c, clusterd::LocateRequest(), &endpoint); });

  clusterd::testing::ConnectionFlood flood;
  int opened = flood.Open(host, port, 1, connections / 2, /*preface=*/false, /*first_source=*/-1);
  opened += flood.Open(host, port, 1, connections - connections / 2, /*preface=*/true, -1);
  if (endpoint.port() > 0) opened += flood.Open(host, endpoint.port(), 1, connections, false, -1);

  // A new channel: a new connection, from the flood's own address.
  auto fresh = grpc::CreateChannel(host + ":" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto head = clusterd::HeadService::NewStub(fresh);
  clusterd::ClusterStatus status;
  const auto asked = std::chrono::steady_clock::now();
  const bool served = WithDeadline(
      token, [&](grpc::ClientContext* c) { return head->GetStatus(c, clusterd::StatusRequest(), &status); });
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  const int closed = flood.ClosedByPeer();
  flood.CloseAll();
  std::cout << "flood: opened " << opened << ", closed by the head " << closed << ", status "
            << (served ? "SERVED" : "UNSERVED") << " (" << took.count() << " ms)" << std::endl;
  return 0;
}
