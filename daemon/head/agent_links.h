// The head's side of the node agents' streams: which node each stream
// speaks for, registering a node on its stream, counting whatever a stream
// says (and the heartbeats recorded off the loop) as a sign of life, and
// ending a node's stream or its node when the stream breaks. A node has at
// most one live stream: a newer one replaces the old.
//
// What the messages mean for jobs is not here (HeadCore routes them); this
// class keeps the streams and the node table in step. Plain class on the
// head's event loop, no sockets of its own; NOT thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "common/status.h"
#include "daemon/head/agent_connection.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class AgentLinks {
 public:
  // Called whenever a stream is no longer kept (ended, broken, replaced or
  // closed by the head), so that what is kept per stream elsewhere goes too.
  using StreamForgotten = std::function<void(AgentConnection*)>;

  // REQUIRES: nodes outlives this object. `heartbeat_ms` is what a
  // registration's answer tells the agent.
  AgentLinks(NodeTable* nodes, int heartbeat_ms, StreamForgotten on_forgotten);

  // This machine's own addresses: a node whose stream comes from one of
  // them (or from loopback) runs on the head's machine.
  void set_local_addresses(const std::set<std::string>& addresses) { local_addresses_ = addresses; }
  // The head is going away, not its nodes: a stream that ends from now on
  // no longer counts its node DEAD.
  void Stopping() { stopping_ = true; }

  // A RegisterNode on `connection`: answered with the node's id, name,
  // incarnation and heartbeat period. Returns the node's record, or null
  // when the registration is refused (the stream is then closed).
  const NodeInfo* Register(const std::shared_ptr<AgentConnection>& connection, const RegisterNode& request);
  // Any other message on `connection` proves its node alive (a heartbeat
  // also brings its usage). Returns the node it speaks for; nullopt, with
  // the stream closed, when the stream never registered or the node table
  // already counts its incarnation as gone.
  std::optional<std::string> Heard(const std::shared_ptr<AgentConnection>& connection, const AgentMessage& message);
  // Hands each live stream's newest heartbeat recorded off the loop to the
  // node table.
  void CollectHeartbeats();

  // Why the node's stream ends when it does, unless a reason is already set.
  void SetStopReason(AgentConnection* connection, const std::string& reason);
  // The stream ended from the agent's side or broke. Returns the node it
  // made DEAD (MarkDisconnected, with the stop reason if one was set, else
  // `cause`); nullopt when none (not registered, or the head is stopping).
  std::optional<std::string> Disconnected(AgentConnection* connection, const std::string& cause);

  // The node has a live stream.
  bool Connected(const std::string& node_id) const { return link_of_node_.count(node_id) > 0; }
  // False when the node has no live stream.
  bool SendToNode(const std::string& node_id, const HeadMessage& message);
  // Sends `stop` to the node and sets why its stream will end. False when
  // the node has no live stream.
  bool AskToStop(const std::string& node_id, const std::string& stop_reason, const HeadMessage& stop);
  // Closes the node's live stream with `status`, if it has one.
  void CloseNode(const std::string& node_id, const Status& status);

 private:
  struct Link {
    std::shared_ptr<AgentConnection> connection;
    std::string node_id;      // empty until registered
    int64_t incarnation = 0;
    std::string stop_reason;  // set when the head asked the agent to stop, or it said it is stopping
  };

  // The link of `connection`, made on its first message.
  Link& LinkOf(const std::shared_ptr<AgentConnection>& connection);
  void Erase(std::map<AgentConnection*, Link>::iterator link);
  // Where a registration came from; logs a claimed address that does not
  // match the peer the head sees.
  NodeTable::Origin OriginOf(const Link& link, const RegisterNode& request) const;

  NodeTable* nodes_;
  int heartbeat_ms_;
  StreamForgotten on_forgotten_;
  bool stopping_ = false;
  std::set<std::string> local_addresses_;
  std::map<AgentConnection*, Link> links_;
  std::map<std::string, AgentConnection*> link_of_node_;  // node id -> its live stream
};

}  // namespace clusterd
