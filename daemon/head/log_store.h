// The head's copy of every rank's output, shipped up by the agents, so that
// `clusterctl logs` works from anywhere and outlives the node that ran the
// rank. One file per job and rank, across attempts (each attempt starts
// with a banner line), <root>/<job id>.rank-<n>.log: flat, since a folder
// per job made each job's first log line allocate a directory, ext4's
// costliest inode. Logs of jobs from before, <root>/<job id>/rank-<n>.log,
// are still read and appended to.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/status.h"

namespace clusterd {

class LogStore {
 public:
  // An empty root keeps nothing (for unit tests of the job manager).
  explicit LogStore(std::string root) : root_(std::move(root)) {}

  void Append(const std::string& job_id, int rank, const std::string& data);
  // Up to max_bytes from offset; sets *end to the offset after what was read.
  // A log nothing was written to yet is empty. InvalidArgument for an
  // offset below 0 or past the end of the log: offsets come from clients.
  Result<std::string> Read(const std::string& job_id, int rank, int64_t offset, int64_t max_bytes,
                           int64_t* end) const;
  // The log's size in bytes (0 when nothing was written yet): where a tail begins.
  int64_t Size(const std::string& job_id, int rank) const;
  // The last `lines` lines of a rank's log.
  std::string Tail(const std::string& job_id, int rank, int lines) const;
  // The attempt whose banner comes last in a rank's log, or -1 when it has
  // none: a head restarted mid-attempt does not write that banner again.
  int LastAttempt(const std::string& job_id, int rank) const;

 private:
  std::string PathOf(const std::string& job_id, int rank) const;
  std::string root_;
  bool root_made_ = false;
  std::set<std::string> in_old_folders_;  // jobs whose logs are in a folder of their own
  std::set<std::string> looked_at_;       // jobs Append has checked for one: it is on the log-shipping path
};

}  // namespace clusterd
