// The head's agent port: node agents' streams as frames over TCP, or TLS
// when the cluster has it (common/net/frame_channel.h), one WireConnection
// each. One thread runs every connection's I/O; what the head must decide
// goes to its event loop. Agents find the port through
// NodeAgentService.Locate on the head's gRPC port (agent_service.h).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <functional>
#include <vector>

#include "common/status.h"
#include "common/net/tls.h"
#include "daemon/rpc/agent_wire_connection.h"
#include "daemon/rpc/connection_gate.h"
#include "daemon/rpc/descriptor_reserve.h"

namespace clusterd {

class AgentWireServer {
 public:
  // REQUIRES: core and loop outlive the server. `guard`: bounds on streams
  // that have not yet said a hello with the token (connection_gate.h),
  // HeadPortGuard(config) (server_limits.h).
  // Hellos' tokens are resolved by core->users().
  AgentWireServer(HeadCore* core, EventLoop* loop, const PortGuard& guard);
  AgentWireServer(const AgentWireServer&) = delete;
  AgentWireServer& operator=(const AgentWireServer&) = delete;
  ~AgentWireServer();  // Stop()

  // Listens on ip:port (0: any free port) and starts serving. The error
  // names the address.
  Status Start(const std::string& ip, int port, const TlsConfig& tls);
  int port() const { return port_; }
  // Where agents registering from now on may send heartbeat datagrams.
  // REQUIRES: datagrams outlives the server.
  void set_datagrams(HeartbeatReceiver* datagrams) { context_.datagrams = datagrams; }
  // How long a new connection has to say hello (tests shorten it). Before Start.
  void set_hello_deadline_ms(int ms) { context_.hello_deadline_ms = ms; }
  // Stops accepting, closes every connection (the agents see their stream
  // end), and joins the thread.
  void Stop();

 private:
  void Accept();
  // Counts a new stream from `peer` as unproven, closing older ones the
  // gate says must go. io thread.
  ConnectionGate::Id Admit(const boost::asio::ip::tcp::endpoint& peer);
  void Handshake(boost::asio::ip::tcp::socket socket, ConnectionGate::Id id);
  void Adopt(std::shared_ptr<FrameChannel> channel, ConnectionGate::Id id);

  WireConnection::Context context_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;  // after a failed accept
  DescriptorReserve reserve_;
  // io thread only: streams that have not proven the token, and how to
  // close each (a TLS handshake under way, or a channel).
  ConnectionGate gate_;
  std::unordered_map<ConnectionGate::Id, std::function<void()>> closers_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  int port_ = 0;
  std::thread thread_;
  // Every channel, so that Stop can close them; expired ones are pruned
  // as the list doubles. io thread only.
  std::vector<std::weak_ptr<FrameChannel>> channels_;
  size_t prune_at_ = 64;
};

}  // namespace clusterd
