// What each attempt leaves on this node's disk: the working folder of one
// that ships its code (launch_prep.h's WorkingFolder), and the hash caches
// of the folders its uploads are sent from (that folder, its checkpoints).
// They go once nothing of the attempt here needs them, so that a worker that
// runs for months does not fill its disk with the jobs it ran.
// Not thread-safe: the node agent owns it, on its loop.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"

namespace clusterd {

class AttemptFiles {
 public:
  // Removes an attempt's working folder (LaunchPreparer::RemoveWorkingFolder).
  using RemoveFolderFn = std::function<void(const std::string& folder)>;
  // Whether anything of the attempt here (a rank, a launch, an upload) still needs its files.
  using HeldFn = std::function<bool(const std::string& job_id, int attempt)>;

  // work_dir: where working folders are made (WorkingFolder); hash_dir: the
  // hash caches of the folders this node uploads.
  AttemptFiles(std::string work_dir, std::string hash_dir, RemoveFolderFn remove_folder);

  // Remembers the files the launch's attempt will leave; nothing for one
  // that runs in a folder of the user's (shared mode) and stores no
  // checkpoints. A second launch of the same attempt adds nothing.
  void Track(const LaunchRanks& launch);
  // One more file the attempt left (its preemption notice), removed with the rest.
  void TrackFile(const std::string& job_id, int attempt, const std::string& path);
  // Removes the files of every tracked attempt that `held` says nothing needs, and forgets it.
  void RemoveDone(const HeldFn& held);
  bool empty() const { return files_.empty(); }
  size_t tracked() const { return files_.size(); }

  // Working folders of agents that are gone (a crash, a SIGKILL) hold
  // nothing anyone will use again: removes <parent of work_dir>/<pid>/ for
  // each pid, other than this process's, that no longer runs.
  static void RemoveStaleWorkDirs(const std::string& work_dir);

 private:
  struct Files {
    std::string folder;  // "": none of ours (shared mode)
    std::vector<std::string> hash_roots;
    std::vector<std::string> files;  // single files of ours (TrackFile)
  };

  const std::string work_dir_;
  const std::string hash_dir_;
  const RemoveFolderFn remove_folder_;
  std::map<std::pair<std::string, int>, Files> files_;  // by (job, attempt)
};

}  // namespace clusterd
