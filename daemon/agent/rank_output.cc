// RankRunner, what reaches the head from it: the ranks' output, taken from
// their pipes into logs_ and shipped up, and their reports, through its
// RankReportQueue. An exited rank's log goes before its exit.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/agent/rank_runner.h"

namespace clusterd {

namespace {

constexpr int64_t kLogChunk = 64 * 1024;
// What one tick takes from one rank's pipe at most, so that a rank printing
// without pause cannot hold the loop; the rest waits in the pipe.
constexpr int64_t kOutputPerTick = 4 << 20;

}  // namespace

void RankRunner::FlushUnreported() {
  hang_.activity().RetellIdle();  // a head that restarted knows no rank as idle
  ShipExitedLogs();
  reports_.Flush();
}

bool RankRunner::WaitsForLog(const AgentMessage& message) const {
  if (!message.has_rank_exited()) return false;
  const RankExited& exit = message.rank_exited();
  return std::any_of(unshipped_.begin(), unshipped_.end(), [&](const Rank& rank) {
    return rank.job_id == exit.job_id() && rank.attempt == exit.attempt() && rank.rank == exit.rank();
  });
}

RankRunner::Rank* RankRunner::RankOfProcess(pid_t pid) {
  // A reporter is tied to the rank it descends from: its parent chain
  // (/proc/PID/stat's ppid, from the SO_PEERCRED pid up) must reach the
  // process the launcher started for the rank. Every rank runs as the same
  // user in the launcher's session, so what one rank can set, another can
  // too: a process group (setpgid into another rank's group), a session,
  // an environment secret or a socket path (both readable in /proc). A
  // parent is the one thing a process cannot choose: it changes only when
  // the parent dies, and then to the ranks' subreaper (the attempt's
  // keeper, launcher_process.h), which is no rank. A rank's pid names
  // another process only once it was reaped, and the rank leaves ranks_
  // as soon as the agent hears so: in between, the pids would have to
  // wrap around.
  if (pid <= 1) return nullptr;
  pid_t at = pid;
  for (int depth = 0; at > 1 && depth < kMaxAncestry; ++depth, at = launcher_->ParentOf(at)) {
    auto rank = std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.pid == at; });
    if (rank != ranks_.end()) return &*rank;
  }
  return nullptr;
}

namespace {

Status NotARank(pid_t peer) {
  return Status::FailedPrecondition(fmt::format(
      "process {} is not a rank this node agent runs: it is not one, nor started by one (reports are tied to a "
      "rank by parent processes; a process group or session does not count)",
      peer));
}

}  // namespace

Result<std::string> RankRunner::ReporterOf(pid_t peer) {
  const Rank* rank = RankOfProcess(peer);
  if (!rank) return NotARank(peer);
  return fmt::format("{}/{}/{}", rank->job_id, rank->attempt, rank->rank);
}

Status RankRunner::TakeReport(MetricsReport* report, pid_t peer) {
  Rank* rank = RankOfProcess(peer);
  if (!rank) return NotARank(peer);
  report->set_job_id(rank->job_id);
  report->set_attempt(rank->attempt);
  report->set_rank(rank->rank);
  AgentMessage message;
  *message.mutable_metrics() = *report;
  hang_.activity().Touched(rank->job_id, rank->attempt, rank->rank, clock_->NowMicros());
  return reports_.ReportMetrics(std::move(message), &rank->reports);
}

void RankRunner::TakeOutput(Rank& rank) {
  char buffer[64 << 10];
  for (int64_t taken = 0; rank.output >= 0 && taken < kOutputPerTick;) {
    ssize_t n = read(rank.output, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;  // all of it, for now
    if (n <= 0) {  // every writer closed it (or it broke): nothing more comes
      close(rank.output);
      rank.output = -1;
      return;
    }
    logs_.Append(LogName(rank), rank.rank, rank.cap.Take(std::string_view(buffer, static_cast<size_t>(n))));
    if (taken == 0) hang_.activity().Touched(rank.job_id, rank.attempt, rank.rank, clock_->NowMicros());
    taken += n;
  }
}

void RankRunner::FinishOutput(Rank& rank) { logs_.Append(LogName(rank), rank.rank, rank.cap.Finish()); }

bool RankRunner::ShipLog(Rank& rank) {
  const std::string name = LogName(rank);
  const int64_t size = logs_.Size(name, rank.rank);
  while (rank.shipped < size) {
    int64_t end = 0;
    auto read = logs_.Read(name, rank.rank, rank.shipped, kLogChunk, &end);
    if (!read.ok() || read->empty()) {
      LOG_WARN("job {} attempt {} rank {}: its log cannot be read: {}", rank.job_id, rank.attempt, rank.rank,
               read.ok() ? "it ends early" : read.status().message());
      rank.shipped = size;  // what cannot be read now will not be later either
      return true;
    }
    const int64_t n = end - rank.shipped;
    std::string data = std::move(*read);
    AgentMessage message;
    auto* log = message.mutable_log();
    log->set_job_id(rank.job_id);
    log->set_attempt(rank.attempt);
    log->set_rank(rank.rank);
    log->set_data(std::move(data));
    if (!reports_.SendUnkept(message)) return false;  // try again once the head is back
    rank.shipped += n;
  }
  return true;
}

void RankRunner::ShipExitedLogs() {
  size_t done = 0;
  for (; done < unshipped_.size() && ShipLog(unshipped_[done]); ++done) {
    logs_.Release(LogName(unshipped_[done]), unshipped_[done].rank);
  }
  unshipped_.erase(unshipped_.begin(), unshipped_.begin() + static_cast<ptrdiff_t>(done));
}

}  // namespace clusterd
