#include "daemon/agent/rank_zero_results.h"

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/agent/launch_prep.h"

namespace clusterd {

bool IsInside(const std::string& path, const std::string& dir) {
  char real_path[PATH_MAX], real_dir[PATH_MAX];
  if (!realpath(path.c_str(), real_path) || !realpath(dir.c_str(), real_dir)) return false;
  std::string p = real_path, d = real_dir;
  return p.size() > d.size() && p.compare(0, d.size(), d) == 0 && p[d.size()] == '/';
}

void RankZeroResults::Remember(const LaunchRanks& launch) {
  bool has_rank_zero = false;
  for (const RankLaunch& r : launch.ranks()) has_rank_zero = has_rank_zero || r.rank() == 0;
  if (!has_rank_zero || (!launch.store_checkpoints() && launch.outputs_size() == 0)) return;
  RankZero zero;
  zero.work_dir = launch.working_dir();
  zero.checkpoint_dir = CheckpointDirOf(launch);
  zero.store_checkpoints = launch.store_checkpoints();
  zero.outputs.assign(launch.outputs().begin(), launch.outputs().end());
  zero.checkpoint_storage = launch.checkpoint_storage();
  zero.checkpoint_bytes_per_s = launch.checkpoint_upload_bytes_per_s();
  zero.outputs_storage = launch.outputs_storage();
  std::lock_guard<std::mutex> lock(mutex_);
  launches_[{launch.job_id(), launch.attempt()}] = std::move(zero);
}

void RankZeroResults::OnReport(const MetricsReport& report) {
  if (report.checkpoint().empty() || report.rank() != 0) return;
  std::string checkpoint_dir, location;
  int64_t bytes_per_s = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = launches_.find({report.job_id(), report.attempt()});
    if (it == launches_.end() || !it->second.store_checkpoints) return;
    checkpoint_dir = it->second.checkpoint_dir;
    location = it->second.checkpoint_storage;
    bytes_per_s = it->second.checkpoint_bytes_per_s;
  }
  if (checkpoint_dir.empty() || !IsInside(report.checkpoint(), checkpoint_dir)) {
    uploader_->Refuse(report.job_id(), report.attempt(), report.checkpoint(),
                      checkpoint_dir.empty()
                          ? "the job has no checkpoint folder (CLUSTER_CHECKPOINT_DIR) to store it from"
                          : fmt::format("it is not inside the job's checkpoint folder {}", checkpoint_dir));
    return;
  }
  uploader_->StoreCheckpoint(report.job_id(), report.attempt(), checkpoint_dir, report.checkpoint(), location,
                             bytes_per_s);
}

bool RankZeroResults::TakeExit(const AgentMessage& message) {
  if (!message.has_rank_exited()) return false;
  const RankExited& exited = message.rank_exited();
  bool clean = exited.exit_code() == 0 && exited.signal() == 0 && exited.error().empty();
  bool settled = !exited.outputs_manifest().empty() || !exited.outputs_error().empty();
  if (exited.rank() != 0 || settled) return false;
  RankZero zero;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = launches_.find({exited.job_id(), exited.attempt()});
    if (it == launches_.end()) return false;
    zero = std::move(it->second);
    launches_.erase(it);
  }
  if (zero.store_checkpoints) uploader_->Unpace(exited.job_id(), exited.attempt());
  if (!clean) return false;
  if (!zero.outputs.empty()) {
    uploader_->StoreOutputs(message, zero.work_dir, zero.outputs, zero.outputs_storage);
    return true;
  }
  // A job SUCCEEDS with its last checkpoint stored: whoever fetches it once
  // the job has ended gets the last one, not the one before.
  if (zero.store_checkpoints && uploader_->StoringCheckpoint(exited.job_id(), exited.attempt())) {
    uploader_->ReportAfterCheckpoints(message);
    return true;
  }
  return false;
}

}  // namespace clusterd
