#include "daemon/head/rank_env.h"

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/jobspec/search_space.h"

namespace clusterd {

bool ShipsPackage(const JobSpec& spec) { return !spec.package_id().empty(); }

std::string CheckpointDir(const JobInfo& job) {
  std::string dir = job.spec().checkpoint().dir();
  if (dir.empty()) dir = "checkpoints/" + job.job_id();
  if (ShipsPackage(job.spec())) return dir;
  const std::string& base = job.spec().working_dir();
  return JoinPath(base.empty() ? "." : base, dir);
}

std::map<std::string, std::string> RankEnvironment(const JobInfo& job, const AttemptInfo& attempt,
                                                   const RankInfo& rank, int local_world_size,
                                                   const std::string& node_ip) {
  // Later layers win: the submitter's variables, then the job's env, then
  // ours, which a job file cannot override by accident.
  std::map<std::string, std::string> env(job.passthrough_env().begin(), job.passthrough_env().end());
  for (const auto& [key, value] : job.spec().env()) env[key] = value;

  env["RANK"] = std::to_string(rank.rank());
  env["WORLD_SIZE"] = std::to_string(attempt.ranks_size());
  env["LOCAL_RANK"] = std::to_string(rank.local_rank());
  env["LOCAL_WORLD_SIZE"] = std::to_string(local_world_size);
  env["NODE_RANK"] = std::to_string(rank.node_rank());
  env["MASTER_ADDR"] = attempt.master_addr();
  env["MASTER_PORT"] = std::to_string(attempt.master_port());
  // Always set: a rank without GPUs sees none ("") rather than all of them.
  std::string devices;
  for (int gpu : rank.gpus()) devices += (devices.empty() ? "" : ",") + std::to_string(gpu);
  env["CUDA_VISIBLE_DEVICES"] = devices;
  env["CLUSTER_NODE_IP"] = node_ip;
  env["CLUSTER_JOB_ID"] = job.job_id();
  env["CLUSTER_JOB_NAME"] = job.spec().name();
  env["CLUSTER_ATTEMPT"] = std::to_string(attempt.attempt());
  if (!job.spec().array_id().empty()) {  // as Slurm's SLURM_ARRAY_JOB_ID, _TASK_ID and _TASK_COUNT
    env["CLUSTER_ARRAY_ID"] = job.spec().array_id();
    env["CLUSTER_ARRAY_INDEX"] = std::to_string(job.spec().array_index());
    env["CLUSTER_ARRAY_COUNT"] = std::to_string(job.spec().array().count());
  }
  env["CLUSTER_CHECKPOINT_DIR"] = CheckpointDir(job);
  env["CLUSTER_CHECKPOINT_KEEP"] = std::to_string(job.spec().has_checkpoint() ? job.spec().checkpoint().keep() : 2);
  // A sweep trial's values, which its shell entrypoint reads by name.
  for (auto& [key, value] : TrialEnvironment(job.spec())) env[key] = std::move(value);

  return env;
}

void FactorSharedEnv(LaunchRanks* launch) {
  if (launch->ranks_size() == 0) return;
  auto& shared = *launch->mutable_env();
  if (launch->ranks_size() == 1 && shared.empty()) {  // most launches: all of it is shared, as it is
    shared.swap(*launch->mutable_ranks(0)->mutable_env());
    return;
  }
  for (const auto& [key, value] : launch->ranks(0).env()) {
    bool everywhere = true;
    for (const RankLaunch& r : launch->ranks()) {
      auto it = r.env().find(key);
      everywhere = everywhere && it != r.env().end() && it->second == value;
    }
    if (everywhere) shared[key] = value;
  }
  for (RankLaunch& r : *launch->mutable_ranks()) {
    for (const auto& [key, value] : shared) r.mutable_env()->erase(key);
  }
}

}  // namespace clusterd
