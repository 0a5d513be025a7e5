// The checks once the run drained: every job listed, final and in the state
// its history calls for, no process of any job left, and the journal
// replaying to the same jobs after a SIGKILL and after a clean stop.
#include <algorithm>
#include <regex>
#include <thread>

#include "chaos.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

std::map<std::string, std::string> Chaos::Snapshot(const ListJobsReply& list) {
  std::map<std::string, std::string> out;
  for (const JobInfo& job : list.jobs()) {
    out[job.job_id()] = fmt::format("{} attempts={} checkpoints={} reason={}", JobState_Name(job.state()),
                                    AttemptCount(job), job.stored_checkpoints_size(), job.reason().substr(0, 120));
  }
  return out;
}

// Stops the serving head (SIGKILL, or clusterd stop), starts it again, and
// compares every job with what it said before: a single head replays its
// journal; in HA the next leader reads the state from etcd.
void Chaos::CompareReplay(const std::string& how) {
  std::optional<ListJobsReply> before = ListJobs();
  if (!before) {
    r_->replay_mismatches.push_back(how + ": could not list the jobs before");
    return;
  }
  if (how == "SIGKILL") {
    if (!c_.KillServingHead()) r_->replay_mismatches.push_back("SIGKILL: no serving head's clusterd found");
  } else {
    std::string error;
    if (!c_.StopServingHead(&error)) r_->replay_mismatches.push_back(error);
  }
  head_down_ = true;
  if (!RestartHead("for the replay check (" + how + ")")) {
    r_->replay_mismatches.push_back(how + ": the head did not restart");
    return;
  }
  std::optional<ListJobsReply> after = ListJobs();
  if (!after) {
    r_->replay_mismatches.push_back(how + ": could not list the jobs after");
    return;
  }
  std::map<std::string, std::string> was = Snapshot(*before), is = Snapshot(*after);
  for (const auto& [id, line] : was) {
    auto it = is.find(id);
    if (it == is.end()) {
      r_->replay_mismatches.push_back(fmt::format("{}: {} was {}, gone after the restart", how, id, line));
    } else if (it->second != line) {
      r_->replay_mismatches.push_back(fmt::format("{}: {} was {}, is {}", how, id, line, it->second));
    }
  }
  for (const auto& [id, line] : is) {
    if (!was.count(id)) r_->replay_mismatches.push_back(fmt::format("{}: {} appeared: {}", how, id, line));
  }
  Note(fmt::format("replay after {}: {} jobs compared", how, was.size()));
}

void Chaos::Check() {
  std::optional<ListJobsReply> list = ListJobs();
  std::map<std::string, JobInfo> final_jobs;
  if (list) {
    for (const JobInfo& job : list->jobs()) final_jobs[job.job_id()] = job;
  } else {
    // The listing itself is broken (a finding already): ask for each job.
    for (const ChaosJob& job : jobs_) {
      if (auto info = c_.Job(job.id)) final_jobs[job.id] = *info;
    }
  }
  std::set<std::string> ours;
  for (ChaosJob& job : jobs_) {
    ours.insert(job.id);
    auto it = final_jobs.find(job.id);
    if (it == final_jobs.end()) {
      r_->lost.push_back(job.id + " (" + KindName(job.kind) + ")");
      continue;
    }
    const JobInfo& info = it->second;
    // Any attempt with a rank on a worker while a fault held it was touched too.
    for (const NodeWindow& w : windows_) {
      for (const AttemptInfo& attempt : info.attempts()) {
        int64_t end = attempt.end_unix_ms() ? attempt.end_unix_ms() : UnixMs();
        if (attempt.start_unix_ms() > w.end_ms + 2000 || end < w.start_ms - 2000) continue;
        for (const RankInfo& rank : attempt.ranks()) {
          if (rank.node_name() == w.node) {
            job.touches.push_back(w.kind + " on " + w.node + " during attempt " + std::to_string(attempt.attempt()));
            break;
          }
        }
      }
    }
    if (!IsFinalState(info.state())) {
      r_->stuck.push_back(fmt::format("{} ({}) still {}: {}", job.id, KindName(job.kind), JobState_Name(info.state()),
                                      info.reason().substr(0, 160)));
      continue;
    }
    std::string why;
    if (!FinalStateFits(job, info, &why)) r_->wrong.push_back(why);
    if (job.kind == JobKind::kLogFlood && info.state() == SUCCEEDED) {
      // Each rank printed ~40 MB under log_limit 1Mi: the head holds its
      // first part and its tail, and says what went between.
      testing::RunResult logs = c_.Ctl({"logs", job.id, "--rank", "0"}, 60s);
      const size_t bound = (size_t{1} << 20) + (64 << 10);
      if (logs.out.size() > bound || logs.out.find("[clusterd:") == std::string::npos) {
        Finding(fmt::format("{} (log_flood): rank 0's log is {} bytes (bound {}){}", job.id, logs.out.size(), bound,
                            logs.out.find("[clusterd:") == std::string::npos ? ", with no line saying what was dropped"
                                                                             : ""));
      }
    }
    if (job.kind == JobKind::kCheckpoint && info.state() == SUCCEEDED && AttemptCount(info) > 1) {
      ++r_->checkpoint_retried;
      testing::RunResult logs =
          c_.Ctl({"logs", job.id, "--rank", "0", "--attempt", std::to_string(AttemptCount(info) - 1)}, 30s);
      static const std::regex resumed("resumes at epoch (\\d+)");
      std::smatch match;
      if (std::regex_search(logs.out, match, resumed) && std::stoi(match[1]) > 1) ++r_->checkpoint_resumed;
    }
  }
  for (const auto& [id, info] : final_jobs) {
    if (!ours.count(id)) Finding(fmt::format("a job the run did not submit is listed: {} {}", id, info.spec().name()));
  }
  // Processes of jobs: sh's children outlive a SIGKILLed sh for their sleep, so give them time.
  testing::WaitFor([&] { return PidsWithVariable(mark_).empty(); }, 15s, 500ms);
  for (pid_t pid : PidsWithVariable(mark_)) {
    std::string line = DescribePid(pid);
    for (testing::Machine* w : c_.workers()) {
      std::vector<pid_t> pids = w->Pids();
      if (std::find(pids.begin(), pids.end(), pid) != pids.end()) line += " on " + w->name();
    }
    for (const ChaosJob& job : jobs_) {
      if (line.find(" of " + job.id + " ") == std::string::npos) continue;
      line += fmt::format(" ({} job; faults: ", KindName(job.kind));
      for (size_t i = 0; i < job.touches.size(); ++i) line += (i ? "; " : "") + job.touches[i];
      line += ")";
    }
    r_->leaked.push_back(line);
  }
  CompareReplay("SIGKILL");
  CompareReplay("clusterd stop");
  Poll();
}

}  // namespace clusterd::bench
