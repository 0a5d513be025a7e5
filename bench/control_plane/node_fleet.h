// Simulated node agents: each holds its own connection to a real head's
// agent port (found with NodeAgentService.Locate, as agents find it), says
// hello, registers, then heartbeats at a fixed period, as an agent does:
// as datagrams where the head offers them (one UDP socket for the fleet),
// and on the stream until the head says it hears them.
// Streams are FrameChannels on one io thread (no thread per stream); one
// ticker thread starts the heartbeats.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent.pb.h"
#include "common/net/tls.h"

namespace clusterd::bench {

struct FleetOptions {
  std::string address;
  std::string token;
  std::string name_prefix = "sim";
  int nodes = 1000;
  int heartbeat_ms = 500;
  // How often each node asks its head for an answer (a heartbeat with
  // kAnswerMe, or answer_me on the stream), as an agent does every
  // keepalive_ms (daemon/agent/head_liveness.h).
  int keepalive_ms = 2000;
  TlsConfig tls;  // on: the head serves TLS, and the nodes verify it against this CA
};

class NodeFleet {
 public:
  explicit NodeFleet(FleetOptions options);
  ~NodeFleet();  // Stop()

  // Finds the agent port and connects every node; false (and why) when
  // the head could not be asked or a node could not connect.
  bool Start(std::string* error);
  // Waits until every stream got its `registered` reply (false on timeout).
  bool WaitRegistered(std::chrono::milliseconds limit);
  int registered() const { return registered_.load(); }
  // Streams that broke or were closed by the head since Start().
  int lost() const { return lost_.load(); }
  int64_t heartbeats_sent() const { return heartbeats_.load(); }
  // Nodes whose heartbeat datagrams the head says it hears now.
  int heard_by_datagram() const { return heard_by_datagram_.load(); }
  // Answers the head sent back: datagrams on the fleet's socket, and HeadAlive on streams.
  int64_t answers() const { return answers_.load(); }
  // Closes every stream and waits for them to end.
  void Stop();

 private:
  class SimNode;
  void Tick();
  // The fleet's UDP socket toward the head's heartbeat port, opened at the
  // first registration that offers one; -1 when none could be.
  int DatagramSocket(int port);
  // Counts the answer datagrams that have arrived, without waiting.
  void DrainAnswers();

  FleetOptions options_;
  boost::asio::io_context io_;
  std::thread io_thread_;
  std::vector<std::unique_ptr<SimNode>> nodes_;  // sized at Start; the first made_ are made
  std::atomic<int> made_{0};
  std::thread ticker_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> registered_{0}, lost_{0};
  std::atomic<int64_t> heartbeats_{0};
  std::atomic<int64_t> answers_{0};
  std::atomic<int> heard_by_datagram_{0};
  std::once_flag datagram_once_;
  std::atomic<int> datagram_fd_{-1};
  std::mutex done_mutex_;
  std::condition_variable done_changed_;
  int done_ = 0;
  bool started_ = false, stopped_ = false;
};

}  // namespace clusterd::bench
