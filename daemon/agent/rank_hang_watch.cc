#include "daemon/agent/rank_hang_watch.h"

#include <signal.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/agent/rank_probe.h"

namespace clusterd {

namespace {

// Processes of one rank probed at most: a rank with a pool of data
// loader workers must not make a diagnosis read thousands of files.
constexpr size_t kMaxProbedProcesses = 32;
// The head asks a wait of about half a second; more than this is a mistake.
constexpr int64_t kMaxDiagnosisWaitMs = 10000;
constexpr int kMaxTailLines = 1000;

}  // namespace

void RankHangWatch::Watch(const WatchRanks& watch, const std::vector<RankHere>& here, Micros now) {
  activity_.Watch(watch, now);
  // Ranks that needed nothing fetched may have started before the watch came.
  for (const RankHere& rank : here) activity_.Started(watch.job_id(), watch.attempt(), rank.rank, rank.pid, now);
}

void RankHangWatch::Diagnose(const DiagnoseRanks& request, const std::vector<RankHere>& here, Micros now) {
  PendingDiagnosis pending;
  pending.answer.set_job_id(request.job_id());
  pending.answer.set_attempt(request.attempt());
  pending.due = now + std::clamp<int64_t>(request.wait_ms(), 0, kMaxDiagnosisWaitMs) * 1000;
  pending.tail_lines = std::clamp(request.tail_lines(), 1, kMaxTailLines);
  activity_.EndAttempt(request.job_id(), request.attempt());  // the head decided: no more to tell
  for (const RankHere& rank : here) {
    RankDiagnosis* diagnosis = pending.answer.add_ranks();
    diagnosis->set_rank(rank.rank);
    diagnosis->set_pid(rank.pid);
    const std::vector<ProcessProbe> tree = ProbeProcessTree(rank.pid, kMaxProbedProcesses);
    if (tree.empty()) {
      diagnosis->set_wait_channel("unreadable");
      diagnosis->set_kernel_stack("unreadable");
      continue;
    }
    const ProcessProbe& telling = MostTelling(tree);
    diagnosis->set_pid(telling.pid);
    diagnosis->set_wait_channel(fmt::format("{} ({})", telling.wait_channel, telling.name));
    diagnosis->set_kernel_stack(telling.kernel_stack);
    // Only Python processes that catch it (the clusterd package's
    // faulthandler): SIGQUIT's default action would end any other with a
    // core dump, telling nothing.
    int python = 0;
    for (const ProcessProbe& process : tree) {
      if (process.python && process.catches_sigquit && kill(process.pid, SIGQUIT) == 0) ++python;
    }
    diagnosis->set_python_processes(python);
    LOG_INFO("job {} attempt {} rank {}: hung, pid {} waits in {}; SIGQUIT to {} Python process{}", request.job_id(),
             request.attempt(), rank.rank, telling.pid, diagnosis->wait_channel(), python, python == 1 ? "" : "es");
  }
  diagnoses_.push_back(std::move(pending));
}

Micros RankHangWatch::Tick(Micros now, const SendFn& send, const TailFn& tail) {
  Micros next = 0;
  auto want = [&next](Micros at) {
    if (at != 0 && (next == 0 || at < next)) next = at;
  };
  if (!activity_.empty()) {
    if (now >= next_cpu_reading_) {
      activity_.TakeCpu(ProcessTreeCpuTicks(activity_.Pids()), now);
      next_cpu_reading_ = now + static_cast<Micros>(std::max(sample_ms_, 1)) * 1000;
    }
    activity_.Report(now, send);
    want(next_cpu_reading_);
    want(activity_.NextDue());
  }
  for (auto it = diagnoses_.begin(); it != diagnoses_.end();) {
    if (now < it->due) {
      want(it->due);
      ++it;
      continue;
    }
    for (RankDiagnosis& diagnosis : *it->answer.mutable_ranks()) {
      diagnosis.set_log_tail(tail(it->answer.job_id(), it->answer.attempt(), diagnosis.rank(), it->tail_lines));
    }
    AgentMessage message;
    *message.mutable_ranks_diagnosed() = std::move(it->answer);
    if (!send(message)) LOG_WARN("a hang's diagnosis could not be sent: the head is away");
    it = diagnoses_.erase(it);
  }
  return next;
}

}  // namespace clusterd
