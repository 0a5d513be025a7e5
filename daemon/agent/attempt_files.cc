#include "daemon/agent/attempt_files.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/file_util.h"
#include "common/storage/checkpoint_snapshot.h"
#include "common/storage/hash_cache.h"
#include "daemon/agent/launch_prep.h"

namespace clusterd {

AttemptFiles::AttemptFiles(std::string work_dir, std::string hash_dir, RemoveFolderFn remove_folder)
    : work_dir_(std::move(work_dir)), hash_dir_(std::move(hash_dir)), remove_folder_(std::move(remove_folder)) {}

void AttemptFiles::Track(const LaunchRanks& launch) {
  // Without a package the job runs in a folder of the user's (shared mode).
  const bool ships = !launch.package_id().empty();
  if (!ships && !launch.store_checkpoints()) return;
  auto [it, added] = files_.try_emplace({launch.job_id(), launch.attempt()});
  if (!added) return;
  Files& files = it->second;
  const std::string folder = ships ? WorkingFolder(work_dir_, launch.job_id(), launch.attempt()) : "";
  if (ships) {
    files.folder = folder;
    files.hash_roots.push_back(folder);  // outputs are sent from it
  }
  // One cache per checkpoint folder: by default a folder per job, so kept
  // they would pile up, in shared mode too.
  const std::string checkpoints = CheckpointDirOf(launch, ships ? folder : launch.working_dir());
  if (launch.store_checkpoints() && !checkpoints.empty()) {
    files.hash_roots.push_back(checkpoints);
    files.hash_roots.push_back(JoinPath(checkpoints, kSnapshotFolder));
  }
}

void AttemptFiles::TrackFile(const std::string& job_id, int attempt, const std::string& path) {
  std::vector<std::string>& files = files_[{job_id, attempt}].files;
  if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
}

void AttemptFiles::RemoveDone(const HeldFn& held) {
  for (auto it = files_.begin(); it != files_.end();) {
    const auto& [job_id, attempt] = it->first;
    if (held(job_id, attempt)) {
      ++it;
      continue;
    }
    for (const std::string& root : it->second.hash_roots) HashCache::Discard(hash_dir_, root);
    if (!it->second.folder.empty()) remove_folder_(it->second.folder);
    for (const std::string& file : it->second.files) ::unlink(file.c_str());
    it = files_.erase(it);
  }
}

void AttemptFiles::RemoveStaleWorkDirs(const std::string& work_dir) {
  std::string parent = work_dir.substr(0, work_dir.rfind('/'));
  DIR* dir = opendir(parent.c_str());
  if (!dir) return;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) RemoveTree(parent + "/" + entry->d_name);
  }
  closedir(dir);
}

}  // namespace clusterd
