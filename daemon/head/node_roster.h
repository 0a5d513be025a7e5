// The nodes the head knows and who each one is: its record and what the
// table keeps beside it, found by id, by name or by its agent's instance
// id, and listed as clients see them (the head's own node first, then by
// name). Identity rules live here: a new node takes the next id node-NNNN;
// the same agent process always gets its own entry back; a name is taken
// again only when its node is dead, or when the agent of a node put back
// after a head restart comes back on the same machine. `generation` moves
// with every change, so that what is built from the roster knows when it
// is stale. NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/gpu_slots.h"
#include "journal.pb.h"

namespace clusterd {

class NodeRoster {
 public:
  struct Entry {
    NodeInfo info;
    std::string instance_id;
    std::string machine;
    Micros last_heard = 0;
    GpuSlots gpus;
    std::string drain_reason;  // while this agent is drained: kept when it registers again
    bool restored = false;     // put back by Restore and not registered since: takes no work
  };
  // ALIVE or DRAINING.
  static bool IsLive(const Entry& entry);
  // ALIVE and registered with this head: work may go there.
  static bool TakesWork(const Entry& entry);

  // Null when no node has this id or name.
  Entry* Find(const std::string& id_or_name);
  const Entry* Find(const std::string& id_or_name) const;

  // The entry a registration takes, and in `*name` the name it goes by:
  // the agent's own entry; else the one of its name (when a live node holds
  // the name: AlreadyExists if the agent insists on it, else the name gets
  // a suffix); null for a node new to the roster.
  Result<Entry*> EntryFor(const RegisterNode& request, const std::string& machine, std::string* name);
  // A node new to the roster, named `name`, with the next id.
  Entry& AddNew(const std::string& name);
  // `entry` is now run by the agent `instance_id` ("" for none).
  void SetInstance(Entry& entry, const std::string& instance_id);
  void SetHead(const Entry& entry) { head_id_ = entry.info.node_id(); }
  // Puts back a node a previous head knew, replacing what the roster has
  // of that id. REQUIRES: the record has an id and a name.
  Entry& Put(const NodeRecord& record);

  // At most `limit` nodes, the head first then by name, starting after the
  // node named `after` ("" = from the start); `*more` says whether any follow.
  std::vector<const NodeInfo*> Page(const std::string& after, size_t limit, bool* more) const;
  std::vector<const NodeInfo*> Nodes() const;
  NodeCounts Counts() const;
  // What a restarted head needs to know of the node.
  static NodeRecord RecordOf(const Entry& entry);
  std::vector<NodeRecord> Records() const;

  std::map<std::string, Entry>& entries() { return nodes_; }
  const std::map<std::string, Entry>& entries() const { return nodes_; }

  uint64_t generation() const { return generation_; }
  void Changed() {
    ++generation_;
    ++membership_;
  }
  // An allocation or a release: the generation moves, the membership does not.
  void Reallocated() { ++generation_; }
  // Changes with every registration and state change, not with allocations.
  uint64_t membership() const { return membership_; }

 private:
  std::string UniqueName(const std::string& wanted) const;

  std::map<std::string, Entry> nodes_;              // by node id
  std::map<std::string, std::string> by_name_;      // name -> node id
  std::map<std::string, std::string> by_instance_;  // agent instance id -> node id
  int next_node_number_ = 1;
  std::string head_id_;  // the head's own node, when it has one
  uint64_t generation_ = 0;
  uint64_t membership_ = 0;
};

}  // namespace clusterd
