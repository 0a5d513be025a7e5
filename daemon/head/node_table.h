// The head's table of nodes: registration and liveness, over the nodes'
// identities (node_roster.h) and their resources (node_allocations.h),
// which it answers for. Plain class driven by events and an injected Clock;
// no sockets, no threads. NOT thread-safe: the head's event loop owns it.
//
// Liveness: a node is ALIVE (or DRAINING) while it is heard from; a broken
// stream makes it DEAD at once (MarkDisconnected), silence longer than
// node_timeout makes it DEAD at the next CheckTimeouts(). A node that
// registers again under the same name keeps its id and gets a new incarnation;
// the same agent process (its instance id) always gets its own entry back,
// and stays DRAINING when it was drained.
//
// Every registration and state change is handed to on_node_changed (the
// head journals it: node_journal.h), and Restore puts a previous head's
// nodes back, so that ids, drains and the dead outlive a head restart.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "journal.pb.h"
#include "common/status.h"
#include "daemon/head/node_allocations.h"
#include "daemon/head/node_roster.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

class NodeTable {
 public:
  // Called after a node enters DEAD, with its record as it was then.
  using NodeCallback = std::function<void(const NodeInfo&)>;

  // Called after every registration and state change, with what a
  // restarted head needs to know of the node.
  using ChangeCallback = std::function<void(const NodeRecord&)>;

  // `restored_grace`: how long a node Restore puts back has to register
  // again before it is DEAD, when longer than node_timeout (a new leader in
  // HA, whose agents must first find it among the heads: ha_node_return_ms).
  NodeTable(const Clock* clock, Micros node_timeout, Micros restored_grace = 0);
  // The same, set before Restore.
  void set_restored_grace(Micros grace) { restored_grace_ = std::max(node_timeout_, grace); }

  // Puts back the nodes a previous head knew, latest record last. The dead
  // stay DEAD; a live one keeps its state, but takes no work until its agent
  // registers again, and is DEAD if that does not happen within
  // node_timeout (or restored_grace, the larger). Changes nothing it is not given.
  void Restore(const std::vector<NodeRecord>& records);
  // Every node as Restore takes it (a compaction of the journal).
  std::vector<NodeRecord> Records() const { return roster_.Records(); }

  // Where a registration came from, as the head's rpc layer sees it.
  struct Origin {
    std::string observed_address;  // the stream's peer IP; empty when unknown
    std::string machine;           // nodes with the same value share a machine ("" = the head's)
  };

  // A node agent introduces itself. Returns the record (ALIVE, new
  // incarnation). Fails when a live node already holds the name it insists on.
  Result<const NodeInfo*> Register(const RegisterNode& request, const Origin& origin = {});

  // A heartbeat from `node_id` at `incarnation`, heard now or at `heard_at`
  // (monotonic micros, not after now), whichever is given; stale
  // incarnations are refused.
  Status Heartbeat(const std::string& node_id, int64_t incarnation, const NodeUsage& usage, Micros heard_at = -1);

  // The node's stream broke: DEAD now, with `cause`. Stale incarnations are ignored.
  void MarkDisconnected(const std::string& node_id, int64_t incarnation, const std::string& cause);

  // Declares DEAD every live node silent for longer than node_timeout.
  // Returns the ids of the nodes it declared dead.
  std::vector<std::string> CheckTimeouts();
  // Whether some live node was last heard within [from, to].
  bool HeardBetween(Micros from, Micros to) const;
  // The head itself did not run for `stalled` (SIGSTOP, a paused VM, a
  // starved machine): no heartbeat could be heard meanwhile, so that much
  // of every live node's silence is the head's, not the node's.
  void ForgiveSilence(Micros stalled);

  // When the next silent node would time out, if none is heard from first
  // (monotonic micros; 0 when no node is live).
  Micros NextDeadline() const;

  // GPU health (docs/OPERATIONS.md, GPU health): a GPU that a heartbeat's
  // usage names with a fault leaves the node's offer and is listed in
  // NodeInfo.bad_gpus until ResetGpu, whatever later heartbeats say; ranks
  // already on it keep running. A node whose every GPU is out is DRAINING.
  // The marks live in the node's record: they outlast its agent's
  // restarts (same name) and, journaled, the head's.
  //
  // Puts GPU `index` back into the node's offer, and a node DRAINING only
  // because every GPU was out back to ALIVE. `*fault` gets what it was out for.
  Result<const NodeInfo*> ResetGpu(const std::string& id_or_name, int index, std::string* fault);

  // No new work goes to a DRAINING node; running work stays.
  Result<const NodeInfo*> Drain(const std::string& id_or_name, const std::string& reason = "drain requested");

  const NodeInfo* Find(const std::string& id_or_name) const;
  // Head first, then by name.
  std::vector<const NodeInfo*> Nodes() const { return roster_.Nodes(); }
  // At most `limit` nodes in the same order, starting after the node named
  // `after` ("" = from the start); `*more` says whether any follow.
  std::vector<const NodeInfo*> Page(const std::string& after, size_t limit, bool* more) const {
    return roster_.Page(after, limit, more);
  }
  // How many nodes are in each state.
  NodeCounts Counts() const { return roster_.Counts(); }
  // Changes with every registration, state change and allocation, so that
  // a summary built from the table is current while this is the same
  // (heartbeats' usage and times aside).
  uint64_t generation() const { return roster_.generation(); }
  // Changes with every registration and state change, not with allocations:
  // which nodes there are and take work.
  uint64_t membership_generation() const { return roster_.membership(); }
  bool IsSchedulable(const std::string& node_id) const;  // ALIVE, not draining
  // The machine a node runs on, as Origin::machine gave it.
  std::string MachineOf(const std::string& node_id) const;

  // Resource accounting and what the scheduler plans on: node_allocations.h.
  bool TryAllocate(const std::string& node_id, const ResourceSet& request, std::vector<int>* gpus) {
    return allocations_.TryAllocate(node_id, request, gpus);
  }
  bool TryAllocateExact(const std::string& node_id, const ResourceSet& request, const std::vector<int>& gpus) {
    return allocations_.TryAllocateExact(node_id, request, gpus);
  }
  std::map<int, double> GpuFree(const std::string& node_id) const { return allocations_.GpuFree(node_id); }
  void Release(const std::string& node_id, int64_t incarnation, const ResourceSet& request,
               const std::vector<int>& gpus) {
    allocations_.Release(node_id, incarnation, request, gpus);
  }
  const std::vector<NodeCapacity>& SchedulableNow() { return allocations_.SchedulableNow(); }
  const std::vector<NodeCapacity>& SchedulableTotals() { return allocations_.SchedulableTotals(); }

  void set_on_node_dead(NodeCallback callback) { on_node_dead_ = std::move(callback); }
  void set_on_node_changed(ChangeCallback callback) { on_node_changed_ = std::move(callback); }

  Micros node_timeout() const { return node_timeout_; }
  // How long a restored node has to register again: node_timeout or more.
  Micros restored_grace() const { return restored_grace_; }

 private:
  using Entry = NodeRoster::Entry;
  void Transition(Entry& entry, NodeState state, const std::string& cause);
  // Takes the GPUs `usage` names with a fault out of the offer; true when any went.
  bool TakeOutFaultyGpus(Entry& entry, const NodeUsage& usage);
  // Withholds the entry's bad GPUs from its slots, and drains a node with
  // none left (after a registration rebuilt the slots, or a GPU went bad).
  void ApplyBadGpus(Entry& entry);

  const Clock* clock_;
  Micros node_timeout_;
  Micros restored_grace_;  // node_timeout_ or more
  NodeRoster roster_;
  NodeAllocations allocations_{&roster_};
  NodeCallback on_node_dead_;
  ChangeCallback on_node_changed_;
};

const char* NodeStateName(NodeState state);

}  // namespace clusterd
