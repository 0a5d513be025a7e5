// Rank logs, one per job (or job attempt) and rank. The head keeps its copy
// of every rank's output, shipped up by the agents, so that `clusterctl
// logs` works from anywhere and outlives the node that ran the rank (one
// log per job and rank across attempts, each attempt opening with a banner
// line). Each node agent keeps what its ranks print, read from their pipes,
// until the head has it and for the exit's tail.
//
// Where a log lives, by size: most ranks print a few lines, and a file each
// made every job allocate an inode, on ext4 without a journal the costliest
// thing the head and the launchers did (see LogPacks). So a log is kept in
// the shared packs (<root>/packs/) until it grows past packed_limit, then
// moved whole to a file of its own, <root>/<key>.log, and appended there
// (<key> is "<job id>.rank-<n>"). Logs of jobs from before, in such files
// or in a folder per job (<root>/<job id>/rank-<n>.log), are still read and
// appended to.
// NOT thread-safe: the owner's event loop has it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/log_limiter.h"
#include "common/log_packs.h"
#include "common/status.h"

namespace clusterd {

class LogStore {
 public:
  static constexpr int64_t kDefaultPackedLimit = 64 << 10;

  // An empty root keeps nothing (for unit tests of the job manager).
  // Indexes what the root holds; what cannot be read is logged and left out.
  explicit LogStore(std::string root, int64_t packed_limit = kDefaultPackedLimit);

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
  // This store will not be asked about the log again (an agent's, once the
  // rank ended and its log shipped): what it holds in memory for it goes
  // (a long-lived agent runs millions of ranks), and its packed bytes with
  // their pack (one this store began) once no log kept here is in it; a
  // file of its own stays.
  void Release(const std::string& job_id, int rank);
  // A deleted job's logs (ranks 0 to ranks - 1) go: memory and disk, but
  // for packed bytes sharing a pack with logs still kept (LogPacks::Forget).
  void Delete(const std::string& job_id, int ranks);
  // At start, for a store that alone writes its root (the head's): the
  // packs still hold logs of jobs deleted before; forgets every packed log
  // whose job `known` says no to, and from now on deletes packs from before
  // that hold no log still kept (LogPacks::OwnLoadedPacks).
  void ForgetJobsExcept(const std::function<bool(const std::string& job_id)>& known);

 private:
  static std::string KeyOf(const std::string& job_id, int rank);
  // The file a log has to itself, or "" while it is packed (or has nothing).
  std::string FileOf(const std::string& job_id, int rank) const;
  // Moves a packed log and `data` after it into a file of its own.
  Status MoveToFile(const std::string& job_id, int rank, const std::string& data);
  // Appends `data` whole, or nothing of it.
  Status Keep(const std::string& job_id, int rank, const std::string& data);
  struct Loss {
    int64_t bytes = 0;
    std::string why;
  };

  std::string root_;
  int64_t packed_limit_;
  LogPacks packs_;
  std::set<std::string> own_files_;    // keys of logs in <root>/<key>.log
  std::map<std::string, Loss> lost_;   // output not kept since the last that was, by key
  LogLimiter loss_warnings_{20, 10'000'000};
  std::set<std::string> old_folders_;  // jobs whose logs are in a folder of their own
};

}  // namespace clusterd
