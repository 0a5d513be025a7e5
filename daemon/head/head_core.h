// The head's state and logic in one place, fed by events: agent messages,
// broken streams, timer ticks and API calls. Owns the node table (and the
// job managers built on it). No sockets and no threads: the rpc layer posts
// every call onto the one event loop that owns this object.
// NOT thread-safe.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/agent_connection.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/job_store.h"
#include "common/logs/log_store.h"
#include "daemon/head/node_journal.h"
#include "daemon/head/node_table.h"
#include "daemon/head/sweep_manager.h"

namespace clusterd {

class HeadCore {
 public:
  // REQUIRES: store, logs, blobs, sweep_store and node_store (the last
  // three may be null: no blob store; sweeps kept in memory; nodes not
  // journalled) outlive this object.
  HeadCore(const Clock* clock, const Config& config, JobStore* store, LogStore* logs, BlobStore* blobs = nullptr,
           JobStore* sweep_store = nullptr, JobStore* node_store = nullptr);

  // Replays the journals (the nodes a previous head knew; jobs, running
  // ones awaiting their agents; then the sweeps over them), and journals
  // the nodes' changes from then on.
  Status Restore();

  // Kept messages taken from one stream beyond which it is answered at
  // once rather than at the next tick (the agent keeps at most 4096).
  static constexpr int64_t kEagerDeliveries = 1024;

  // Every message an agent sends on its stream. The first must be a
  // RegisterNode; a connection whose registration is refused is closed.
  void OnAgentMessage(const std::shared_ptr<AgentConnection>& connection, const AgentMessage& message);
  // The stream ended from the agent's side or broke.
  void OnAgentDisconnected(AgentConnection* connection, const std::string& cause);
  // The head is going away (clusterd stop), not its nodes: the streams it
  // closes from now on, and the silence while it stops, must not count a
  // node DEAD nor end its jobs' attempts in the journal, so that the head
  // started again adopts the ranks still running there, as after a crash.
  void Stopping() { stopping_ = true; }
  // Takes the heartbeats the streams recorded, then runs timeouts; call at
  // least every heartbeat. Returns when to call next at the latest
  // (monotonic micros).
  Micros Tick();
  // The clock the rpc layer stamps recorded heartbeats with.
  const Clock* clock() const { return clock_; }
  const Config& config() const { return config_; }

  // API (clusterctl). GetStatus lists at most `nodes_per_state` nodes of
  // each state (0: all); that bounded listing comes from a snapshot kept
  // while the node table is unchanged, at most a heartbeat period old.
  ClusterStatus GetStatus(int nodes_per_state = 0);
  ListNodesReply ListNodes(const ListNodesRequest& request) const;
  Result<NodeInfo> DrainNode(const std::string& id_or_name);
  Result<NodeInfo> StopNode(const std::string& id_or_name);

  JobManager& jobs() { return jobs_; }
  SweepManager& sweeps() { return sweeps_; }
  const NodeTable& nodes() const { return nodes_; }
  void set_head_address(const std::string& address) { head_address_ = address; }
  // This machine's own addresses: a node whose stream comes from one of
  // them (or from loopback) runs on the head's machine.
  void set_local_addresses(const std::vector<std::string>& addresses) {
    local_addresses_ = std::set<std::string>(addresses.begin(), addresses.end());
  }

 private:
  bool stopping_ = false;
  struct Link {
    std::shared_ptr<AgentConnection> connection;
    std::string node_id;      // empty until registered
    int64_t incarnation = 0;
    std::string stop_reason;  // set when the head asked the agent to stop
    int64_t delivery_seq_seen = 0;       // the newest kept message (AgentMessage.delivery_seq) taken
    int64_t delivery_seq_asked = 0;      // the newest one a Delivered was asked for
    bool delivery_ack_waiting = false;   // that Delivered waits for the journal's sync
    bool delivery_due = false;           // listed in delivery_due_
  };

  // Nodes (at most `per_state` of each state; 0: all), their counts and
  // the live nodes' resources.
  ClusterStatus NodeStatus(int per_state) const;
  void HandleRegister(Link& link, const RegisterNode& request);
  // Where a registration came from; logs a claimed address that does not
  // match the peer the head sees.
  NodeTable::Origin OriginOf(const Link& link, const RegisterNode& request) const;
  void CloseNodeConnection(const std::string& node_id, const Status& status);
  bool SendToNode(const std::string& node_id, const HeadMessage& message);
  // Hands each live stream's newest recorded heartbeat to the node table.
  void CollectHeartbeats();
  // Tells the agent, once the journal has synced what its kept messages
  // changed, that it may forget them (Delivered). Asked for at each tick
  // (or after kEagerDeliveries), so the answers cost the agents' streams
  // a message per stream and heartbeat period, not one per exit: nothing
  // waits on them but the agent's memory.
  // False when the answer before is still waiting for its sync.
  bool AcknowledgeWhenDurable(Link& link);
  void AcknowledgeDeliveries();
  void OnDeliveriesDurable(const std::weak_ptr<AgentConnection>& connection, int64_t up_to, const Status& status);
  // Tells the job manager about a node that the table has just declared dead.
  void AfterNodeDeath(const std::string& node_id);

  const Clock* clock_;
  Config config_;
  // When the last Tick asked to run next: a Tick much later than that
  // means the head itself did not run (Tick forgives the nodes that time).
  Micros next_tick_ = 0;
  NodeTable nodes_;
  std::unique_ptr<NodeJournal> node_journal_;  // null: nodes are not journalled
  JobManager jobs_;
  SweepManager sweeps_;  // after jobs_, which it drives
  std::map<AgentConnection*, Link> links_;
  std::map<std::string, AgentConnection*> link_of_node_;  // node id -> its live stream
  // Streams with kept messages not yet answered, so that a tick looks at
  // those only, not at every node's. An entry may outlive its stream.
  std::vector<AgentConnection*> delivery_due_;
  std::string head_address_;
  std::set<std::string> local_addresses_;
  struct StatusSnapshot {
    uint64_t generation = 0;
    Micros built_at = 0;
    int per_state = -1;
    ClusterStatus nodes;  // NodeStatus(per_state)
  };
  StatusSnapshot snapshot_;
};

}  // namespace clusterd
