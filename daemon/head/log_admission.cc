#include "daemon/head/log_admission.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/text.h"

namespace clusterd {

Status LogAdmission::CheckSpec(const JobSpec& spec) const {
  const int64_t most = config_.log_limit_max_mb * (int64_t{1} << 20);
  if (spec.log_limit_bytes() > 0 && most > 0 && spec.log_limit_bytes() > most) {
    return Status::InvalidArgument(fmt::format(
        "key 'log_limit': {} is above the most this cluster keeps of a rank's output, {} (log_limit_max_mb)",
        HumanBytes(static_cast<uint64_t>(spec.log_limit_bytes())), HumanBytes(static_cast<uint64_t>(most))));
  }
  return Status::Ok();
}

int64_t LogAdmission::RankLimit(const JobSpec& spec) const {
  if (spec.log_limit_bytes() > 0) return spec.log_limit_bytes();
  return std::max<int64_t>(config_.log_rank_limit_mb, 0) * (int64_t{1} << 20);
}

LogAdmission::Budget LogAdmission::StartAttempt(const std::string& job_id, int attempt, const JobSpec& spec,
                                                int ranks, int64_t job_bytes) {
  Budget budget;
  budget.limit_bytes = RankLimit(spec);
  if (JobLimit() > 0) {
    const int64_t share = std::max<int64_t>(JobLimit() - job_bytes, 0) / std::max(ranks, 1);
    budget.limit_bytes = budget.limit_bytes > 0 ? std::min(budget.limit_bytes, share) : share;
    budget.limit_bytes = std::max(budget.limit_bytes, kMinRankBudget);
  }
  if (budget.limit_bytes > 0) {
    budget.tail_bytes = std::min(std::max<int64_t>(config_.log_tail_kb, 0) * 1024, budget.limit_bytes / 2);
  }
  Attempt& held = attempts_[job_id];
  held = Attempt();
  held.attempt = attempt;
  held.rank_allowed = budget.limit_bytes > 0 ? budget.limit_bytes + kLineRoom : -1;
  return budget;
}

LogAdmission::Attempt& LogAdmission::AttemptOf(const std::string& job_id, int attempt, const JobSpec& spec) {
  Attempt& held = attempts_[job_id];
  if (held.attempt != attempt) {
    held = Attempt();
    held.attempt = attempt;
    const int64_t limit = RankLimit(spec);
    held.rank_allowed = limit > 0 ? limit + kLineRoom : -1;
  }
  return held;
}

std::string LogAdmission::Admit(const std::string& job_id, int attempt, int rank, std::string data,
                                const JobSpec& spec, int ranks, int64_t job_bytes) {
  Attempt& held = AttemptOf(job_id, attempt, spec);
  if (held.cut.count(rank)) return "";
  int64_t& received = held.received[rank];
  const int64_t size = static_cast<int64_t>(data.size());
  int64_t keep = size;
  std::string why;
  if (held.rank_allowed >= 0 && received + size > held.rank_allowed) {
    keep = std::max<int64_t>(held.rank_allowed - received, 0);
    why = fmt::format("its node sent more than this rank's log limit ({}) allows",
                      HumanBytes(static_cast<uint64_t>(held.rank_allowed - kLineRoom)));
  }
  // The job's limit, with room for each rank's lines of this attempt.
  const int64_t job_allowed = JobLimit() + kLineRoom * std::max(ranks, 1);
  if (JobLimit() > 0 && job_bytes + keep > job_allowed) {
    keep = std::max<int64_t>(job_allowed - job_bytes, 0);
    why = fmt::format("the job's logs reached their limit of {} (log_job_limit_mb)",
                      HumanBytes(static_cast<uint64_t>(JobLimit())));
  }
  received += size;
  if (keep == size) return data;
  held.cut.insert(rank);
  data.resize(static_cast<size_t>(keep));
  if (!data.empty() && data.back() != '\n') data += '\n';
  data += fmt::format("[clusterd: the head drops the rest of this rank's output in attempt {}: {}]\n", attempt, why);
  return data;
}

}  // namespace clusterd
