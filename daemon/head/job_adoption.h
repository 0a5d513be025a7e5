// A restarted head (DESIGN rule 7). The journal is replayed: finished jobs
// keep their history, queued ones queue again, and running ones wait for
// their agents to report their ranks: adopted when all come back, their
// attempt failed otherwise (AttemptInterrupts::CheckDeadlines). A rank
// of an attempt that is over, still running on a node that registers
// again, keeps its share until it exits. Separate because only a restart
// needs it: the rest of the head sees adopted ranks as any others.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/logs/log_store.h"
#include "common/status.h"
#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_results.h"
#include "daemon/head/job_retention.h"
#include "daemon/head/job_store.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class JobAdoption {
 public:
  // What a restart restores and adopts through. REQUIRES: each outlives
  // this object.
  struct Parts {
    JobStore* store;
    JobTable* table;
    NodeTable* nodes;
    LogStore* logs;
    JobData* data;
    JobArrays* arrays;
    JobResults* results;
    JobRetention* retention;
    const InfeasibleShapes* infeasible;
    JobLaunch* launch;
  };
  // `send` reaches a node's agent; `schedule` looks at the queue again.
  JobAdoption(const Clock* clock, const Config& config, Parts parts, JobLaunch::SendFn send,
              std::function<void()> schedule)
      : clock_(clock), config_(config), parts_(parts), send_(std::move(send)), schedule_(std::move(schedule)) {}

  // Replays the journal into the job table (see the top of this file).
  Status Restore();
  // A node registered with the ranks it still runs: those the journal
  // placed there are adopted; the others (of attempts that are over) are
  // held until their exit and told to stop.
  void AdoptRanks(const NodeInfo& node, const RegisterNode& request);
  // While adopting: takes the exit of a rank that ended while the head was
  // away, from the node the journal placed it on; false if it is not that node.
  bool AdoptExitedRank(TrackedJob& job, const std::string& node_id, int rank);
  // A rank that outlived its attempt exited: its share is free again.
  void ReleaseRemnant(const std::string& node_id, const RankExited& message);
  // The node's table entry was reset: nothing it held is to be given back.
  void OnNodeDead(const NodeInfo& node);

 private:
  // An orphaned rank (of an attempt that is over) on a node that registered
  // again holds its share until it exits.
  void HoldRemnant(const NodeInfo& node, const LiveRank& live);

  const Clock* clock_;
  const Config& config_;
  Parts parts_;
  JobLaunch::SendFn send_;
  std::function<void()> schedule_;
  // (node, job, attempt, rank) -> the share of a rank that outlived its attempt.
  std::map<std::tuple<std::string, std::string, int, int>, RankSlot> remnants_;
};

}  // namespace clusterd
