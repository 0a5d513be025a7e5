// The nodes' own journal (nodes.journal beside the jobs'): a NodeRecord for
// every registration and state change of the head's node table, replayed
// at start (NodeTable::Restore) so that a restarted head gives each node
// its id again, shows the nodes that died, and keeps drains. Without it,
// ids would follow the order agents come back in: `clusterctl drain
// node-0003` meant for one machine would drain another.
//
// Records are written, not synced: one per registration would be an
// fdatasync per node on the loop (10,000 at a cluster's start). What the
// kernel holds survives the head's crash; a power loss may take the last
// seconds of changes, and the agents register again anyway.
//
// Compaction: once the file holds four times the live records (and at
// least 1 MiB), it is rewritten with each node's latest record.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_store.h"
#include "journal.pb.h"

namespace clusterd {

class NodeJournal {
 public:
  // Every node's latest record, for a compaction.
  using RecordsFn = std::function<std::vector<NodeRecord>()>;

  // REQUIRES: clock and store outlive this object.
  NodeJournal(const Clock* clock, JobStore* store, RecordsFn records);

  // The latest record of each node, in the order the nodes first appeared.
  Result<std::vector<NodeRecord>> Load();
  // Appends one node's record; a failure is logged, not returned (the node
  // is in the table either way, and the next record or compaction of it
  // carries its state).
  void Record(const NodeRecord& record);
  // Replaces the file with the current records (all of them), as a
  // compaction does: after a Load that failed, so that appends go on in a
  // file that reads back.
  void Rewrite();

 private:

  const Clock* clock_;
  JobStore* store_;
  RecordsFn records_;
  std::map<std::string, uint64_t> live_bytes_;  // node id -> its latest record's size in the file
  uint64_t live_total_ = 0;
};

}  // namespace clusterd
