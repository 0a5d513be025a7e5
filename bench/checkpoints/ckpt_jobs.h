// The checkpoints benchmark's jobs on its SimCluster (head, w1-w3, client):
// job files for bench/checkpoints/ckpt_rank, submitting them from the
// client, finding what the ranks wrote on whichever worker they ran, and
// clearing a job away (stopped, deleted from the head's store, its folders
// removed from the workers) so that every trial starts alike.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim_cluster.h"

namespace clusterd::bench {

inline const std::string kJobFolder = "/tmp/ckb/job";  // client: the working_dir, ckpt_rank in it
inline const std::string kOutRoot = "/tmp/ckb/out";    // workers: each job's OUT_DIR is kOutRoot/TAG

struct JobShape {
  std::string mode;  // ckpt_rank's: "failover" or "steps"
  int mib = 0;       // checkpoint size
  int workers = 1;   // num_workers (STRICT_SPREAD)
  int max_failures = 0;
  std::string upload_rate;  // checkpoint.upload_rate; "": the default
  int priority = 0;         // the job file's priority:
  std::vector<std::string> sets;  // more --set KEY=VALUE (env.X=..., preemption_grace_s=...)
};

// What a rank wrote when it started (ckpt_rank's start-a<A>-r<R> file).
struct RankStart {
  int64_t ns = 0;
  std::string found;  // newest complete checkpoint it found, "-" for none
  uint64_t bytes = 0;  // of that checkpoint's files
  std::string checkpoint_dir;
  testing::Machine* machine = nullptr;
};

// Copies the rank program into the client's job folder.
bool MakeJobFolder(SimCluster& cluster, const std::string& rank_program, std::string* error);
// Submits a job of that shape from the client with OUT_DIR kOutRoot/tag;
// its id in *job_id.
bool SubmitJob(SimCluster& cluster, const JobShape& shape, const std::string& tag, std::string* job_id,
               std::string* error);
// The start file of (attempt, rank) of job `tag`, from any worker but `skip`.
std::optional<RankStart> FindStart(SimCluster& cluster, const std::string& tag, int attempt, int rank,
                                   const testing::Machine* skip = nullptr);
// Stops the job if it runs, deletes it (its checkpoints leave the head's
// store) and removes its working folders and OUT_DIR from every worker.
void ClearJob(SimCluster& cluster, const std::string& job_id, const std::string& tag);
// The pid of the machine's clusterd (the simulated machines share the pid
// namespace with the benchmark), or nullopt.
std::optional<pid_t> DaemonPid(testing::Machine& machine);

}  // namespace clusterd::bench
