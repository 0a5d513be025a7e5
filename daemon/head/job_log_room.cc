// JobManager, the head's log store kept under log_store_limit_mb and
// log_store_min_free_mb free on its disk: the store lives in the head's
// state folder, beside the journal, and a disk filled by logs would stop
// the journal and with it every change of state. Once the store wants room
// (LogStore::WantsRoom), the logs of the jobs that finished first go,
// as `clusterctl delete` would take them but keeping the job's record,
// which says why (JobInfo.logs_released). A running job's logs never go:
// when only theirs are left, the store itself refuses output past the
// limit or the floor and marks where it is missing (LogStore).
#include <algorithm>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/text.h"
#include "daemon/head/job_manager.h"

namespace clusterd {

namespace {

// A look that found nothing to remove is not made again for this long:
// each goes over every job the head holds.
constexpr Micros kLogRoomLookEvery = 1'000'000;

}  // namespace

void JobManager::MakeLogRoom() {
  const Micros now = clock_->NowMicros();
  if (log_room_looked_ != 0 && now - log_room_looked_ < kLogRoomLookEvery) return;
  const bool was_stuck = log_room_looked_ != 0;
  const int64_t limit = logs_->limit_bytes();
  const bool over_limit =
      limit > 0 && static_cast<double>(logs_->DiskBytes()) > LogStore::kRoomHigh * static_cast<double>(limit);
  const std::string why =
      over_limit ? fmt::format("logs removed to keep the log store under {} (log_store_limit_mb)",
                               HumanBytes(static_cast<uint64_t>(limit)))
                 : fmt::format("logs removed to keep {} free on the head's disk (log_store_min_free_mb)",
                               HumanBytes(static_cast<uint64_t>(2 * logs_->min_free_bytes())));
  // Oldest first: by when they ended, then by submission.
  std::vector<std::tuple<int64_t, uint64_t, Job*>> finished;
  for (auto& [job_id, job] : jobs_) {
    if (IsTerminal(job.info.state()) && job.info.logs_released().empty() && logs_->JobBytes(job_id) > 0) {
      finished.emplace_back(job.info.end_unix_ms(), job.seq, &job);
    }
  }
  std::sort(finished.begin(), finished.end());
  int removed = 0;
  int64_t freed = 0;
  std::string first;
  for (const auto& [end, seq, job] : finished) {
    if (logs_->HasRoom()) break;
    const std::string& job_id = job->info.job_id();
    int ranks = job->info.spec().num_workers();
    for (const auto& attempt : job->info.attempts()) ranks = std::max(ranks, attempt.ranks_size());
    freed += logs_->JobBytes(job_id);
    logs_->Delete(job_id, ranks);
    job->info.set_logs_released(why);
    Persist(*job);
    if (removed++ == 0) first = job_id;
  }
  log_room_looked_ = logs_->HasRoom() ? 0 : now;
  if (removed > 0) {
    LOG_INFO("removed the logs of {} finished job{} ({}{}, {}): {}", removed, removed == 1 ? "" : "s", first,
             removed == 1 ? "" : " and others", HumanBytes(static_cast<uint64_t>(freed)), why);
  }
  if (log_room_looked_ != 0 && !was_stuck) {  // said once, until room is made again
    LOG_WARN("the head's log store holds {} (log_store_limit_mb: {}) with {} free on its disk (log_store_min_free_mb: "
             "{}), and no finished job's logs are left to remove: running jobs' output past either is dropped",
             HumanBytes(static_cast<uint64_t>(logs_->DiskBytes())), HumanBytes(static_cast<uint64_t>(limit)),
             HumanBytes(static_cast<uint64_t>(std::max<int64_t>(logs_->FreeBytes(), 0))),
             HumanBytes(static_cast<uint64_t>(logs_->min_free_bytes())));
  }
}

}  // namespace clusterd
