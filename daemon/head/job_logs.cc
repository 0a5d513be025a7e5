#include "daemon/head/job_logs.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/logs/attempt_banner.h"
#include "common/text.h"

namespace clusterd {

namespace {

// A look that found nothing to remove is not made again for this long:
// each goes over every job the head holds.
constexpr Micros kLogRoomLookEvery = 1'000'000;

// The most ranks any attempt of the job had: the logs it may have.
int RanksEver(const JobInfo& info) {
  int ranks = info.spec().num_workers();
  for (const auto& attempt : info.attempts()) ranks = std::max(ranks, attempt.ranks_size());
  return ranks;
}

}  // namespace

void JobLogs::OnJobRemoved(const TrackedJob& job) {
  logs_->Delete(job.info.job_id(), RanksEver(job.info));
  admission_.Forget(job.info.job_id());
}

LogAdmission::Budget JobLogs::StartAttempt(const TrackedJob& job) {
  const AttemptInfo& attempt = CurrentAttempt(job.info);
  return admission_.StartAttempt(job.info.job_id(), attempt.attempt(), job.info.spec(), attempt.ranks_size(),
                                 logs_->JobBytes(job.info.job_id()));
}

void JobLogs::OnLog(const std::string& node_id, const LogData& message) {
  TrackedJob* job = table_->Find(message.job_id());
  // Only the node running that rank of the current attempt writes its log:
  // not a node cut off with an old attempt, not a made-up rank.
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  if (!SpeaksForRank(*job, *nodes_, node_id, message.rank())) return;
  const AttemptInfo& attempt = CurrentAttempt(job->info);
  // Held to the job's log limits whatever the node sent (LogAdmission).
  std::string data = admission_.Admit(message.job_id(), message.attempt(), message.rank(), message.data(),
                                      job->info.spec(), attempt.ranks_size(), logs_->JobBytes(message.job_id()));
  if (data.empty()) return;
  // Each attempt's output opens with a banner (`clusterctl logs --attempt`
  // goes by it), written with the rank's first output rather than at
  // launch: a file per rank is not created on the way to starting it.
  if (job->run.bannered.insert(message.rank()).second && !OpensAttemptAlready(*job, message.rank())) {
    const std::string node = message.rank() < attempt.ranks_size() ? attempt.ranks(message.rank()).node_name() : "";
    data = AttemptBanner(attempt.attempt(), node) + data;
  }
  logs_->Append(message.job_id(), message.rank(), data);
  if (logs_->WantsRoom()) MakeRoom();
}

bool JobLogs::OpensAttemptAlready(const TrackedJob& job, int rank) const {
  // An attempt this head started has no banner yet. A restored one may:
  // the restore looked for it, but a new leader in HA reads its logs back
  // from S3 after the restore (daemon/ha/log_mirror.h), so it looks again
  // (the log is read backwards from its end, once per rank).
  const AttemptInfo& attempt = CurrentAttempt(job.info);
  if (attempt.start_unix_ms() >= created_unix_ms_) return false;
  return logs_->LastAttempt(job.info.job_id(), rank) == attempt.attempt();
}

void JobLogs::MakeRoom() {
  const Micros now = clock_->NowMicros();
  if (room_looked_ != 0 && now - room_looked_ < kLogRoomLookEvery) return;
  const bool was_stuck = room_looked_ != 0;
  const int64_t limit = logs_->limit_bytes();
  const bool over_limit =
      limit > 0 && static_cast<double>(logs_->DiskBytes()) > LogStore::kRoomHigh * static_cast<double>(limit);
  const std::string why =
      over_limit ? fmt::format("logs removed to keep the log store under {} (log_store_limit_mb)",
                               HumanBytes(static_cast<uint64_t>(limit)))
                 : fmt::format("logs removed to keep {} free on the head's disk (log_store_min_free_mb)",
                               HumanBytes(static_cast<uint64_t>(2 * logs_->min_free_bytes())));
  // Oldest first: by when they ended, then by submission.
  std::vector<std::tuple<int64_t, uint64_t, TrackedJob*>> finished;
  table_->ForEachToChange([&](TrackedJob& job) {
    if (IsTerminal(job.info.state()) && job.info.logs_released().empty() && logs_->JobBytes(job.info.job_id()) > 0) {
      finished.emplace_back(job.info.end_unix_ms(), job.seq, &job);
    }
  });
  std::sort(finished.begin(), finished.end());
  int removed = 0;
  int64_t freed = 0;
  std::string first;
  for (const auto& [end, seq, job] : finished) {
    if (logs_->HasRoom()) break;
    const std::string& job_id = job->info.job_id();
    freed += logs_->JobBytes(job_id);
    logs_->Delete(job_id, RanksEver(job->info));
    job->info.set_logs_released(why);
    table_->Persist(*job);
    if (removed++ == 0) first = job_id;
  }
  room_looked_ = logs_->HasRoom() ? 0 : now;
  if (removed > 0) {
    LOG_INFO("removed the logs of {} finished job{} ({}{}, {}): {}", removed, removed == 1 ? "" : "s", first,
             removed == 1 ? "" : " and others", HumanBytes(static_cast<uint64_t>(freed)), why);
  }
  if (room_looked_ != 0 && !was_stuck) {  // said once, until room is made again
    LOG_WARN("the head's log store holds {} (log_store_limit_mb: {}) with {} free on its disk (log_store_min_free_mb: "
             "{}), and no finished job's logs are left to remove: running jobs' output past either is dropped",
             HumanBytes(static_cast<uint64_t>(logs_->DiskBytes())), HumanBytes(static_cast<uint64_t>(limit)),
             HumanBytes(static_cast<uint64_t>(std::max<int64_t>(logs_->FreeBytes(), 0))),
             HumanBytes(static_cast<uint64_t>(logs_->min_free_bytes())));
  }
}

}  // namespace clusterd
