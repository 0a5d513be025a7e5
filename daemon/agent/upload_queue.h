// The results uploader's queue (results_uploader.h): rank 0's checkpoints
// and outputs waiting to be sent, per job attempt, and what each of its two
// workers has under way. It answers what an attempt still holds on this
// node (its working folder must stay, its rank 0 counts as running, its
// exit waits for a checkpoint) and which task a worker takes next: the
// oldest checkpoint, or the oldest outputs whose attempt has no checkpoint
// left to store (an exit held for its checkpoints also goes once its final
// wait is over). A newer checkpoint of an attempt replaces an older one
// still waiting. Kept apart from the sending so that these rules are
// tested without a store or threads. Not thread-safe: the uploader's mutex
// guards it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"

namespace clusterd {

// One thing to send: a checkpoint folder, or outputs and the exit they are reported with.
struct UploadTask {
  AgentMessage exit;             // outputs: the exit to report afterwards
  std::string job_id;
  int attempt = 0;
  std::string root;              // checkpoint_dir, or the work dir
  std::vector<std::string> paths;
  bool outputs = false;
  std::string location;          // ClusterStorage::At
  int64_t bytes_per_s = 0;       // a checkpoint's pace; 0: full speed
  std::string snapshot_of;       // root is its snapshot of this checkpoint_dir; "": none
  int tries = 0;                 // failed so far, each worth another try
  int changed = 0;               // of which because a file changed under the upload
  Micros failing_since = 0;      // the first failure's time
  // An exit with nothing to upload (ReportAfterCheckpoints), reported at the latest at this time.
  std::optional<Micros> report_by;
};

class UploadQueue {
 public:
  // Queues a checkpoint; the older ones of its attempt still waiting are
  // returned (replaced: their snapshots are the caller's to release).
  std::vector<UploadTask> AddCheckpoint(UploadTask task);
  // Queues outputs, or an exit held for its checkpoints (`report_by` set).
  void AddOutputs(UploadTask task) { tasks_.push_back(std::move(task)); }
  // A failed task goes back to the front unless a newer checkpoint of its
  // attempt came meanwhile: then it is dropped, and returned when the newer
  // one is of another folder (its snapshot is no longer needed).
  std::optional<UploadTask> Requeue(UploadTask task);
  // Its attempt's queued checkpoints go at full speed.
  void Unpace(const std::string& job_id, int attempt);

  // The next task a worker of this kind may take, if any, taken off the queue.
  std::optional<UploadTask> TakeNext(bool outputs, Micros now);
  bool HasNext(bool outputs, Micros now) const;
  // Any task of this kind queued, ready or not.
  bool AnyQueued(bool outputs) const;
  // The soonest an exit held for its checkpoints is due (outputs' worker only).
  std::optional<Micros> NextDue(bool outputs) const;

  // The checkpoint worker's task under way, from Take to Finish.
  void StartCheckpoint(const UploadTask& task);
  void FinishCheckpoint();
  // The outputs worker's task under way: its rank is held (HeldRanks).
  void StartOutputs(const UploadTask& task);
  void FinishOutputs() { outputs_now_.reset(); }

  // The checkpoint of this attempt queued or under way, by name: the one
  // under way, else the newest queued ("": none).
  std::string PendingCheckpoint(const std::string& job_id, int attempt) const;
  // Whether the checkpoint under way is this attempt's.
  bool CheckpointUnderWay(const std::string& job_id, int attempt) const;
  // An exit of this attempt is held for its checkpoints.
  bool ExitHeldFor(const std::string& job_id, int attempt) const;
  // A checkpoint or outputs of this attempt are queued or under way.
  bool Holds(const std::string& job_id, int attempt) const;
  // The ranks 0 whose exits wait for their outputs (queued or under way).
  std::vector<LiveRank> HeldRanks() const;
  // The snapshot `task` was sent from is the one under way's, or a waiting
  // task's (the same folder reported again).
  bool SharesSnapshot(const UploadTask& task) const;
  // The snapshot names of `checkpoint_dir` that queued tasks or the one under way are sent from.
  std::set<std::string> SnapshotsInUse(const std::string& checkpoint_dir) const;

 private:
  bool Ready(const UploadTask& task, bool outputs, Micros now) const;

  std::deque<UploadTask> tasks_;
  // The checkpoint under way: its job and attempt, and its snapshot's
  // checkpoint_dir and name.
  std::pair<std::string, int> checkpoint_now_;
  std::pair<std::string, std::string> snapshot_now_;
  std::optional<LiveRank> outputs_now_;  // the rank whose outputs are under way
};

}  // namespace clusterd
