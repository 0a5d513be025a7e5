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
//
// A store may be given a limit on what it holds on disk and a floor of
// free space to leave on its disk (the head's, so that the journal beside
// it never finds its disk full): output that would pass either is not
// kept, and a line where it is missing says how much went and why, once
// there is room again. Its owner makes room before that, by deleting old
// jobs' logs while WantsRoom() and until HasRoom() (JobLogs::MakeRoom).
// NOT thread-safe: the owner's event loop has it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/logs/log_limiter.h"
#include "common/logs/log_packs.h"
#include "common/status.h"

namespace clusterd {

// Told of what a store keeps, as it keeps it: the head's in HA writes rank
// logs on to S3 (daemon/ha/log_mirror.h). Called on the store's thread.
class LogStoreObserver {
 public:
  virtual ~LogStoreObserver() = default;
  // `data` was appended to the log, whole (a marker of output not kept included).
  virtual void OnKept(const std::string& job_id, int rank, const std::string& data) = 0;
  // The job's logs were deleted.
  virtual void OnDeleted(const std::string& job_id) = 0;
};

class LogStore {
 public:
  static constexpr int64_t kDefaultPackedLimit = 64 << 10;

  // An empty root keeps nothing (for unit tests of the job manager).
  // Indexes what the root holds; what cannot be read is logged and left out.
  // limit_bytes: the most its logs may take on disk; min_free_bytes: the
  // least free space to leave on the disk its root is on. 0: none.
  explicit LogStore(std::string root, int64_t packed_limit = kDefaultPackedLimit, int64_t limit_bytes = 0,
                    int64_t min_free_bytes = 0);

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

  // What the logs take on disk now: their files and packs (dead records
  // in packs that still hold live ones included).
  int64_t DiskBytes() const { return packs_.DiskBytes() + file_bytes_; }
  // The bytes of a job's logs (every rank), 0 for a job with none.
  int64_t JobBytes(const std::string& job_id) const;
  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t min_free_bytes() const { return min_free_bytes_; }
  // Free space on the root's disk: asked of the filesystem again once
  // kFreeRecheckBytes were written since (or logs deleted), so that an
  // append costs no statvfs; counted down by what was written meanwhile.
  static constexpr int64_t kFreeRecheckBytes = 1 << 20;
  int64_t FreeBytes();
  // Old logs should go: the store holds more than kRoomHigh of its limit,
  // or its disk has less than twice min_free_bytes free.
  static constexpr double kRoomHigh = 0.9, kRoomLow = 0.8;
  bool WantsRoom();
  // Enough went: at most kRoomLow of the limit, twice min_free_bytes free.
  bool HasRoom();
  // For tests: what tells the free space of a folder's disk (statvfs).
  void SetFreeSpaceProbe(std::function<int64_t(const std::string& folder)> probe);

  // REQUIRES: outlives this store, or is unset first (nullptr).
  void set_observer(LogStoreObserver* observer) { observer_ = observer; }
  LogStoreObserver* observer() const { return observer_; }
  // A head in HA reads its logs back from S3 when it becomes the leader, and
  // the output its predecessor received in its last moments may not be
  // there: a reader that saw it (`clusterctl logs -f`, the dashboard) asks
  // from an offset past the end. With this set, such a read is answered
  // with a line that says so and the log's end as the offset to go on from,
  // rather than InvalidArgument, so that the reader follows the new output.
  void set_offsets_may_run_ahead(bool may) { offsets_may_run_ahead_ = may; }

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

  // The job a key "<job id>.rank-<n>" is of.
  static std::string JobOfKey(const std::string& key);
  // Bytes of the regular files in a folder (a job's old folder of logs).
  static int64_t FolderBytes(const std::string& folder);

  std::string root_;
  int64_t packed_limit_;
  int64_t limit_bytes_;
  int64_t min_free_bytes_;
  std::function<int64_t(const std::string& folder)> free_probe_;
  int64_t free_seen_ = -1;       // the probe's last answer; -1: ask again
  int64_t written_since_free_ = 0;
  int64_t file_bytes_ = 0;                         // of logs in files of their own and in old folders
  std::map<std::string, int64_t> job_bytes_;       // by job id
  std::map<std::string, int64_t> old_folder_bytes_;  // by job id
  LogPacks packs_;
  std::set<std::string> own_files_;    // keys of logs in <root>/<key>.log
  std::map<std::string, Loss> lost_;   // output not kept since the last that was, by key
  LogLimiter loss_warnings_{20, 10'000'000};
  std::set<std::string> old_folders_;  // jobs whose logs are in a folder of their own
  LogStoreObserver* observer_ = nullptr;
  bool offsets_may_run_ahead_ = false;
};

}  // namespace clusterd
