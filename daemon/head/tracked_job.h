// One job as the head tracks it: its record (JobInfo, what the journal
// keeps), its live attempt, its metric reports, and its keys in the
// indexes that each job concern keeps beside the job table. The unit that
// every concern reads and changes; the table (job_table.h) owns it.
// Separate so that each concern can name a job without the others' classes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "daemon/head/job_metrics.h"
#include "daemon/head/node_table.h"

namespace clusterd {

// What ends the current attempt once all its ranks are down.
// kPreempt: it made room for another job (daemon/head/preemption): the job
// goes back into the queue, the attempt counts as no failure.
enum class AttemptEnding { kNone, kSucceed, kFail, kStop, kPreempt };

struct RankSlot {  // one rank's share of a node, to give back
  std::string node_id;
  int64_t incarnation = 0;
  std::vector<int> gpus;
  bool allocated = false;
};

struct LiveAttempt {  // the live attempt of a job
  std::vector<RankSlot> slots;   // by rank
  std::set<int> exited;          // ranks known to be down
  std::set<int> started;         // ranks known to be up
  std::set<int> bannered;        // ranks whose log has this attempt's banner line
  AttemptEnding ending = AttemptEnding::kNone;
  std::string ending_reason;
  bool port_reserved = false;
  int kill_grace_ms = 0;         // SIGTERM to SIGKILL when it is ended; 0: stop_grace_ms
  bool retry = true;             // false: a failure ends the job whatever max_failures says
  bool node_lost = false;        // the attempt ended because a machine died, not by the job's fault
  bool uncounted = false;        // its failure does not count against max_failures (JobInfo.uncounted_failures)
  // Its ending is decided but its ranks were not told to stop: they end by
  // themselves until JobAttempts::KillRemaining (a preemption's deadline, a stop).
  bool ranks_left_running = false;
  std::string outputs_manifest;  // stored by rank 0's node when it exited 0
  int64_t outputs_bytes = 0;
  std::vector<std::string> outputs_missing;
  // Rank 0's checkpoints (their folders' names): the newest it reported,
  // and the newest its node said it stored or could not store; what a
  // preempted job waits for before it resumes (preemption/resume_wait.h).
  std::string checkpoint_reported;
  std::string checkpoint_settled;
  std::string awaited_checkpoint;
  bool adopting = false;         // restored from the journal, waiting for agents
  Micros adopt_deadline = 0;
  Micros started_at = 0;
};

struct TrackedJob {
  JobInfo info;
  LiveAttempt run;               // meaningful while RUNNING or stopping
  bool active = false;           // has a live attempt (JobArrays::SetActive changes it)
  Micros retry_at = 0;           // RESTARTING: when Tick queues it again (monotonic); 0: not waiting
  std::vector<MetricRecord> metrics;
  MetricTally metric_tally;      // what taking a report needs to know of `metrics` (job_metrics.h)
  uint64_t seq = 0;              // order of submission (or of restore), given by the table
  // Its key in JobRetention's retirable jobs (or an array's finished ones),
  // kept: end_unix_ms may be written again after it went in.
  std::pair<int64_t, uint64_t> retire_key{0, 0};
  std::string shape;             // its InfeasibleShapes key while INFEASIBLE, else ""
  std::string demand;            // its PendingDemands key while it waits for resources, else ""
  // ShapeKey(spec, placement) once a backfill pass asked for it, else "":
  // a pass looks at up to backfill_max_jobs jobs on every rank's exit.
  std::string backfill_shape;
};

// Attempts the job has run, those summed up in older_attempts included.
inline int AttemptCount(const JobInfo& info) { return info.older_attempts().count() + info.attempts_size(); }
// The newest attempt. REQUIRES: the job has one.
inline AttemptInfo& CurrentAttempt(JobInfo& info) { return *info.mutable_attempts()->rbegin(); }
inline const AttemptInfo& CurrentAttempt(const JobInfo& info) { return *info.attempts().rbegin(); }
// "exited with code 3", "was killed by signal 9": a rank's end in a reason.
std::string DescribeExit(int exit_code, int signal);

// Who may speak for a rank. What an agent says of a rank counts only from
// the node that runs it, and only for the job's current attempt.
bool IsCurrent(const TrackedJob& job, const std::string& job_id, int attempt);
// Whether `node_id` runs `rank` of the job's current attempt.
bool RunsRank(const TrackedJob& job, const std::string& node_id, int rank);
// Whether the journal placed that rank of the current attempt on
// `node_id`'s node. By name: the ids a restarted head gives the nodes that
// register again need not be those its journal recorded.
bool PlacedOn(const TrackedJob& job, const NodeTable& nodes, const std::string& node_id, int rank);
// RunsRank, or, while adopting, the node the journal placed the rank on: a
// rank that exited while the head was away holds no slot until its exit,
// which its agent sends after what it kept (its log, its reports, a
// stored checkpoint).
bool SpeaksForRank(const TrackedJob& job, const NodeTable& nodes, const std::string& node_id, int rank);

// The next time a timer wants to run (monotonic micros), the earliest of
// those asked for; 0 for none.
struct NextWake {
  Micros at = 0;
  void Want(Micros when) { at = at == 0 ? when : std::min(at, when); }
};

}  // namespace clusterd
