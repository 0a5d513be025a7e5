// How much of the ranks' output the head keeps. Each attempt's ranks are
// told a log limit at launch (LaunchRanks.log_limit_bytes): the job's
// log_limit or log_rank_limit_mb, or less, an even share of what the job's
// own limit (log_job_limit_mb) leaves of its logs. Their node keeps each
// rank's first and last part within it (RankOutputCap), so that the rest
// never crosses the network. The head holds every rank to it too, whatever
// its node sends (an agent of another version, or a hostile one): past
// the limit and a little room for the node's own lines, and past the
// job's limit, output is dropped and a line says so, once per rank and
// attempt.
// NOT thread-safe: the head's event loop owns it, inside JobManager.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "cluster.pb.h"
#include "common/config.h"
#include "common/status.h"

namespace clusterd {

class LogAdmission {
 public:
  // What the node's own lines (RankOutputCap's two) and the head's banner
  // may add to a rank's output within its limit.
  static constexpr int64_t kLineRoom = 4096;
  // The least a rank is told to keep when its job's limit leaves less:
  // its first lines and its traceback; the head's hold on the job's limit
  // drops what does not fit.
  static constexpr int64_t kMinRankBudget = 4096;

  explicit LogAdmission(const Config& config) : config_(config) {}

  // A job whose log_limit is above what this head allows is refused, the
  // limit's key named.
  Status CheckSpec(const JobSpec& spec) const;
  // Each rank's limit by its spec: its log_limit, or log_rank_limit_mb; 0: none.
  int64_t RankLimit(const JobSpec& spec) const;

  struct Budget {
    int64_t limit_bytes = 0;  // 0: no limit
    int64_t tail_bytes = 0;
  };
  // An attempt of `ranks` ranks begins, its job's logs holding job_bytes
  // already: what each rank may keep (for LaunchRanks), held to from now on.
  Budget StartAttempt(const std::string& job_id, int attempt, const JobSpec& spec, int ranks, int64_t job_bytes);
  // What the head keeps of `data`, sent for that rank of that attempt (the
  // current one) while its job's logs hold job_bytes: all of it, a part and
  // the line that says the rest goes, or nothing once that line was kept.
  std::string Admit(const std::string& job_id, int attempt, int rank, std::string data, const JobSpec& spec,
                    int ranks, int64_t job_bytes);
  // The job is deleted: nothing of it is kept here any longer.
  void Forget(const std::string& job_id) { attempts_.erase(job_id); }

 private:
  int64_t JobLimit() const { return config_.log_job_limit_mb * (int64_t{1} << 20); }
  struct Attempt {
    int attempt = -1;
    int64_t rank_allowed = -1;         // each rank's bytes the head takes; -1: no limit
    std::map<int, int64_t> received;   // by rank: bytes sent for it this attempt
    std::set<int> cut;                 // ranks whose further output this attempt is dropped
  };
  // Of a head that started again while the attempt ran, the limit is its
  // spec's; its ranks' nodes were told a share no larger.
  Attempt& AttemptOf(const std::string& job_id, int attempt, const JobSpec& spec);

  const Config& config_;
  std::unordered_map<std::string, Attempt> attempts_;  // by job id: its current attempt
};

}  // namespace clusterd
