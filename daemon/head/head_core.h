// The head's state and logic in one place, fed by events: agent messages,
// broken streams, timer ticks and API calls. It wires the concerns together
// and routes to them: the node table, the agents' streams (agent_links.h),
// the answers to their kept messages (delivery_acks.h), the job and sweep
// managers. No sockets and no threads: the rpc layer posts every call onto
// the one event loop that owns this object.
// NOT thread-safe.
#pragma once

#include <functional>
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
#include "daemon/head/agent_links.h"
#include "daemon/head/delivery_acks.h"
#include "daemon/head/identity/node_blob_access.h"
#include "daemon/head/identity/user_registry.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/job_store.h"
#include "daemon/head/journal_gated_sends.h"
#include "common/logs/log_store.h"
#include "daemon/head/node_journal.h"
#include "daemon/head/node_table.h"
#include "daemon/head/queue_policy/quota_book.h"
#include "daemon/head/sweep_manager.h"
#include "daemon/head/usage_history.h"

namespace clusterd {

class HeadCore {
 public:
  // REQUIRES: store, logs, blobs, sweep_store, node_store and user_store
  // (the last four may be null: no blob store; sweeps kept in memory; nodes
  // not journalled; users kept in memory) outlive this object.
  HeadCore(const Clock* clock, const Config& config, JobStore* store, LogStore* logs, BlobStore* blobs = nullptr,
           JobStore* sweep_store = nullptr, JobStore* node_store = nullptr, JobStore* user_store = nullptr);

  // Replays the journals (the users; the nodes a previous head knew; jobs,
  // running ones awaiting their agents; then the sweeps over them), and
  // journals the nodes' changes from then on.
  Status Restore();

  // Kept messages taken from one stream beyond which it is answered at
  // once rather than at the next tick.
  static constexpr int64_t kEagerDeliveries = DeliveryAcks::kEagerDeliveries;

  // Every message an agent sends on its stream. The first must be a
  // RegisterNode; a connection whose registration is refused is closed.
  void OnAgentMessage(const std::shared_ptr<AgentConnection>& connection, const AgentMessage& message);
  // The stream ended from the agent's side or broke.
  void OnAgentDisconnected(AgentConnection* connection, const std::string& cause);
  // The head is going away (clusterd stop), not its nodes: the streams it
  // closes from now on, and the silence while it stops, must not count a
  // node DEAD nor end its jobs' attempts in the journal, so that the head
  // started again adopts the ranks still running there, as after a crash.
  void Stopping() {
    stopping_ = true;
    links_.Stopping();
  }
  // Takes the heartbeats the streams recorded, then runs timeouts; call at
  // least every heartbeat. Returns when to call next at the latest
  // (monotonic micros).
  Micros Tick();
  // A leader in HA: what the jobs send to agents (launches, kills, port
  // reservations) leaves only once the journal holds the change that caused
  // it, so that a deposed leader acts on nothing (journal_gated_sends.h).
  // Call before Restore.
  void GateSendsOnJournal();
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
  // Puts a GPU that was out for a fault back into its node's offer (node_table.h).
  Result<ResetGpuReply> ResetGpu(const ResetGpuRequest& request);

  // The queue policy's calls (docs/SHARING.md, "Priorities, fair share and
  // quotas"): the queue in the order it starts, and the quotas. Setting a
  // quota is an admin's call (the identity layer checks it).
  QueueListReply ListQueue(int limit) const { return jobs_.ListQueue(limit); }
  Result<QuotaInfo> SetQuota(const SetQuotaRequest& request);
  ListQuotasReply ListQuotas() const { return quota_book_.List(); }
  // Where the quotas are journalled; before Restore. Unset: in memory only.
  void set_quota_store(JobStore* store) { quota_book_ = QuotaBook(clock_, &jobs_.queue_policy().quotas(), store); }

  JobManager& jobs() { return jobs_; }
  SweepManager& sweeps() { return sweeps_; }
  // Users and node tokens: thread-safe, so the rpc and http threads
  // resolve tokens with it directly (user_registry.h).
  UserRegistry& users() { return users_; }
  // Which blobs each node token may fetch: what the head launched on its
  // nodes (identity/node_blob_access.h). Thread-safe, for the store's threads.
  const NodeBlobAccess& node_blobs() const { return node_blobs_; }
  const NodeTable& nodes() const { return nodes_; }
  // A leader in HA: how long each node restored from the journal has to
  // register again before it is DEAD (ha_node_return_ms), its agents having
  // to find this head among the heads first; before Restore. Unset:
  // node_timeout_ms, as for a single head restarted on its machine.
  void set_restored_node_grace(Micros grace) { nodes_.set_restored_grace(grace); }
  // Every live node's use and the cluster's totals over the last window,
  // sampled at Tick (usage_history.h).
  const UsageHistory& usage_history() const { return usage_history_; }
  void set_head_address(const std::string& address) { head_address_ = address; }
  // Told, between ticks, of a deadline sooner than the last Tick said (a
  // preemption's notice is shorter than a heartbeat period); unset, the
  // caller ticks as Tick says.
  void set_tick_wanted(std::function<void(Micros)> fn) { jobs_.set_tick_wanted(std::move(fn)); }
  // This machine's own addresses: a node whose stream comes from one of
  // them (or from loopback) runs on the head's machine.
  void set_local_addresses(const std::vector<std::string>& addresses) {
    links_.set_local_addresses(std::set<std::string>(addresses.begin(), addresses.end()));
  }

 private:
  bool stopping_ = false;

  // Nodes (at most `per_state` of each state; 0: all), their counts and
  // the live nodes' resources.
  ClusterStatus NodeStatus(int per_state) const;
  // Tells the job manager about a node that the table has just declared dead.
  void AfterNodeDeath(const std::string& node_id);
  // Sends a job's message to its node now (false: no live stream).
  bool SendNow(const std::string& node_id, const HeadMessage& message);

  const Clock* clock_;
  Config config_;
  UserRegistry users_;
  NodeBlobAccess node_blobs_;
  // When the last Tick asked to run next: a Tick much later than that
  // means the head itself did not run (Tick forgives the nodes that time).
  Micros next_tick_ = 0;
  NodeTable nodes_;
  UsageHistory usage_history_;
  std::unique_ptr<NodeJournal> node_journal_;  // null: nodes are not journalled
  JobManager jobs_;
  SweepManager sweeps_;  // after jobs_, which it drives
  QuotaBook quota_book_{clock_, &jobs_.queue_policy().quotas(), nullptr};  // after jobs_, whose quotas it sets
  // After nodes_, which they keep in step with the streams, and jobs_,
  // whose journal says when kept messages are durable.
  DeliveryAcks deliveries_;
  AgentLinks links_;
  // Set by GateSendsOnJournal (a leader in HA); else jobs' messages go at once.
  std::unique_ptr<JournalGatedSends> gated_sends_;
  std::string head_address_;
  struct StatusSnapshot {
    uint64_t generation = 0;
    Micros built_at = 0;
    int per_state = -1;
    ClusterStatus nodes;  // NodeStatus(per_state)
  };
  StatusSnapshot snapshot_;
};

}  // namespace clusterd
