#include "daemon/head/job_launch.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/jobspec/job_spec.h"
#include "common/resources.h"
#include "common/storage/s3_config.h"
#include "daemon/head/gang_activity.h"
#include "daemon/head/rank_env.h"

namespace clusterd {

bool JobLaunch::CheckpointsViaStore(const JobSpec& spec) const {
  return IsS3Location(spec.checkpoint().storage()) ||
         (spec.checkpoint().storage() != "shared" && data_->has_store());
}

void JobLaunch::ChooseRestore(TrackedJob& job) const {
  // What the attempt resumes from, on its record: the newest stored
  // checkpoint, which the node of rank 0 restores; otherwise the program
  // itself picks the newest complete one in its folder, the newest reported.
  if (CheckpointsViaStore(job.info.spec())) {
    const auto& stored = job.info.stored_checkpoints();
    CurrentAttempt(job.info).set_restored_checkpoint(stored.empty() ? "" : stored.rbegin()->name());
  } else if (!job.info.latest_checkpoint().empty()) {
    CurrentAttempt(job.info).set_restored_checkpoint(BaseName(job.info.latest_checkpoint()));
  }
}

bool JobLaunch::ReservePort(const TrackedJob& job, const std::string& node_id) {
  HeadMessage reserve;
  reserve.mutable_reserve_port()->set_job_id(job.info.job_id());
  reserve.mutable_reserve_port()->set_attempt(CurrentAttempt(job.info).attempt());
  return send_(node_id, reserve);
}

std::string JobLaunch::Launch(TrackedJob& job) {
  const JobSpec& spec = job.info.spec();
  const bool own_storage = IsS3Location(spec.checkpoint().storage());
  const bool via_store = CheckpointsViaStore(spec);
  const AttemptInfo& attempt = CurrentAttempt(job.info);
  std::map<std::string, LaunchRanks> per_node;  // one message per node
  std::map<std::string, int> local_world;
  for (const auto& rank : attempt.ranks()) ++local_world[rank.node_id()];
  const LogAdmission::Budget log_budget = logs_->StartAttempt(job);
  for (const auto& rank : attempt.ranks()) {
    LaunchRanks& launch = per_node[rank.node_id()];
    if (launch.argv().empty()) {
      launch.set_job_id(job.info.job_id());
      launch.set_attempt(attempt.attempt());
      // No port asked for: the gang is on this one node, which picks it.
      launch.set_pick_master_port(local_world.size() == 1 && attempt.master_port() == 0);
      if (via_store && job.info.stored_checkpoints_size() > 0) {
        *launch.mutable_restore() = *job.info.stored_checkpoints().rbegin();
      }
      if (own_storage) launch.set_checkpoint_storage(spec.checkpoint().storage());
      launch.set_outputs_storage(spec.outputs_storage());
      launch.set_log_limit_bytes(log_budget.limit_bytes);
      launch.set_log_tail_bytes(log_budget.tail_bytes);
      launch.set_run_as(spec.run_as());
      // What each rank asked for becomes its limit on the node (daemon/agent/cgroup_limits.h).
      // (Capped where int64 ends: past it a cast would be undefined; no node has that much.)
      launch.set_memory_limit_bytes(
          static_cast<int64_t>(std::min(Amount(spec.resources_per_worker(), kMemory), 9.0e18)));
      launch.set_cpus_per_rank(Amount(spec.resources_per_worker(), kCpu));
      *launch.mutable_argv() = job.info.spec().entrypoint();
      if (ShipsPackage(job.info.spec())) {
        launch.set_package_id(job.info.spec().package_id());
        launch.set_package_bytes(job.info.spec().package_bytes());
      } else {
        launch.set_working_dir(job.info.spec().working_dir());
      }
    }
    if (rank.rank() == 0) {
      launch.set_store_checkpoints(via_store);
      if (via_store) launch.set_checkpoint_upload_bytes_per_s(EffectiveCheckpointUploadRate(spec));
      if (data_->has_store() || !spec.outputs_storage().empty()) *launch.mutable_outputs() = spec.outputs();
    }
    RankLaunch* r = launch.add_ranks();
    r->set_rank(rank.rank());
    const NodeInfo* node = nodes_->Find(rank.node_id());
    auto env = RankEnvironment(job.info, attempt, rank, local_world[rank.node_id()], node ? node->address() : "");
    r->mutable_env()->insert(env.begin(), env.end());
  }
  for (auto& [node_id, launch] : per_node) {
    FactorSharedEnv(&launch);
    launch.set_config_json(spec.config_json().empty() ? "{}" : spec.config_json());
    HeadMessage message;
    *message.mutable_launch() = std::move(launch);
    if (!send_(node_id, message)) return fmt::format("could not reach node {} to launch ranks", node_id);
    if (spec.hang_timeout_s() > 0) {  // hang detection (hang_watch.h): the node watches the ranks' activity
      HeadMessage watch;
      watch.mutable_watch_ranks()->set_job_id(job.info.job_id());
      watch.mutable_watch_ranks()->set_attempt(attempt.attempt());
      watch.mutable_watch_ranks()->set_idle_after_ms(IdleAfterMs(spec.hang_timeout_s()));
      send_(node_id, watch);
    }
  }
  return "";
}

void JobLaunch::KillRanks(TrackedJob& job) {
  std::set<std::string> nodes;
  for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
    if (!job.run.exited.count(static_cast<int>(rank))) nodes.insert(job.run.slots[rank].node_id);
  }
  HeadMessage kill;
  kill.mutable_kill()->set_job_id(job.info.job_id());
  kill.mutable_kill()->set_attempt(CurrentAttempt(job.info).attempt());
  kill.mutable_kill()->set_grace_ms(job.run.kill_grace_ms > 0 ? job.run.kill_grace_ms : config_.stop_grace_ms);
  for (const auto& node_id : nodes) {
    if (!send_(node_id, kill)) {
      // No stream: the node is dead or going; its ranks are as good as gone.
      for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
        if (job.run.slots[rank].node_id == node_id) job.run.exited.insert(static_cast<int>(rank));
      }
    }
  }
}

}  // namespace clusterd
