#include "daemon/agent/preemption_notice.h"

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

std::string PreemptionNoticePath(const std::string& logs_dir, const std::string& job_id, int attempt) {
  return fmt::format("{}/{}.attempt-{}.preemption", logs_dir, job_id, attempt);
}

Status WritePreemptionNotice(const std::string& logs_dir, const PreemptRanks& notice) {
  // Ids come from the head, which made them; one that could leave the
  // folder is refused all the same.
  if (notice.job_id().empty() || notice.job_id().find('/') != std::string::npos || notice.job_id()[0] == '.') {
    return Status::InvalidArgument(fmt::format("preemption notice for a job id that is no file name: '{}'",
                                               notice.job_id()));
  }
  // Readable by the ranks whatever user they run as, as the config file beside it.
  return WriteFileAtomic(PreemptionNoticePath(logs_dir, notice.job_id(), notice.attempt()),
                         fmt::format("{} {}\n", notice.deadline_unix_ms(), notice.by_job()), 0644,
                         Durability::kWhileRunning);
}

}  // namespace clusterd
