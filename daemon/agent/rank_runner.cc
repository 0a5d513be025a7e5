#include "daemon/agent/rank_runner.h"

#include "daemon/agent/python_package.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/file_util.h"
#include "common/text.h"
#include "daemon/agent/launch_prep.h"
#include "daemon/agent/python_package.h"
#include "daemon/agent/rank_environment.h"
#include "daemon/agent/rank_output_pipes.h"

namespace clusterd {

namespace {

constexpr Micros kKilled = std::numeric_limits<Micros>::max();  // Rank::kill_at once SIGKILL went

AgentMessage RankExit(const std::string& job_id, int attempt, int rank, int exit_code, int signal,
                      const std::string& error) {
  AgentMessage message;
  auto* exited = message.mutable_rank_exited();
  exited->set_job_id(job_id);
  exited->set_attempt(attempt);
  exited->set_rank(rank);
  exited->set_exit_code(exit_code);
  exited->set_signal(signal);
  exited->set_error(error);
  return message;
}

}  // namespace

RankRunner::RankRunner(Options options, const Clock* clock, Launcher* launcher, SendFn send)
    : options_(std::move(options)),
      logs_(options_.logs_dir),
      records_(options_.ranks_dir),
      planner_({options_.logs_dir, options_.socket_path, options_.python_path, options_.node_ip, options_.run_as}),
      clock_(clock),
      launcher_(launcher),
      leftovers_(launcher),
      reports_(std::move(send), [this](const AgentMessage& m) { return WaitsForLog(m); }),
      hang_(options_.hang_sample_ms) {
  MakeDirs(options_.logs_dir);
}

RankRunner::~RankRunner() {
  for (Rank& rank : ranks_) {
    if (rank.output >= 0) close(rank.output);
  }
}

std::string RankRunner::LogName(const Rank& rank) { return fmt::format("{}.attempt-{}", rank.job_id, rank.attempt); }

void RankRunner::ReportNotStarted(const LaunchRanks& launch, int exit_code, int signal, const std::string& error,
                                  const std::string& unrestorable) {
  hang_.activity().EndAttempt(launch.job_id(), launch.attempt());  // nothing of it runs here to watch
  for (const RankLaunch& r : launch.ranks()) {
    AgentMessage exit = RankExit(launch.job_id(), launch.attempt(), r.rank(), exit_code, signal, error);
    exit.mutable_rank_exited()->set_unrestorable_checkpoint(unrestorable);
    if (take_exit_ && take_exit_(exit)) continue;  // never, for a rank that did not run; but it forgets the launch
    reports_.Report(exit);
  }
}

void RankRunner::ExpectLaunch(const LaunchRanks& launch) {
  if (stopping_) return;  // LaunchPrepared or FailLaunch will refuse it
  launches_.Expect(launch);
}

void RankRunner::LaunchPrepared(const LaunchRanks& launch) {
  switch (launches_.Prepared(launch, [this](const LaunchRanks& l) { return EarlierAttemptHere(l); })) {
    case RankLaunchGate::Ready::kCancelled:
      ReportNotStarted(launch, 0, SIGTERM, "");
      return;
    case RankLaunchGate::Ready::kWaits:
      LOG_INFO("job {} attempt {}: waiting for the ranks of an earlier attempt here to end", launch.job_id(),
               launch.attempt());
      return;
    case RankLaunchGate::Ready::kStart:
      Launch(launch);
      return;
  }
}

bool RankRunner::EarlierAttemptHere(const LaunchRanks& launch) const {
  auto earlier = [&](const auto& job_id, int attempt) { return job_id == launch.job_id() && attempt < launch.attempt(); };
  return std::any_of(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return earlier(r.job_id, r.attempt); }) ||
         std::any_of(queued_.begin(), queued_.end(),
                     [&](const LaunchRanks& l) { return earlier(l.job_id(), l.attempt()); }) ||
         leftovers_.HoldsEarlier(launch.job_id(), launch.attempt());
}

void RankRunner::FailLaunch(const LaunchRanks& launch, const std::string& error, const std::string& unrestorable) {
  LOG_WARN("job {} attempt {}: {}", launch.job_id(), launch.attempt(), error);
  launches_.Failed(launch);
  ReportNotStarted(launch, 127, 0, error, unrestorable);
}

void RankRunner::Launch(const LaunchRanks& launch) {
  if (!schedule_start_) {
    StartLaunches({launch});
    return;
  }
  queued_.push_back(launch);
  if (queued_.size() == 1) schedule_start_();
}

void RankRunner::StartQueued() {
  // At most this many launches' pipes are open at once, unstarted.
  constexpr size_t kBatch = 64;
  std::vector<LaunchRanks> queued = std::move(queued_);
  queued_.clear();
  for (size_t first = 0; first < queued.size(); first += kBatch) {
    const size_t end = std::min(queued.size(), first + kBatch);
    StartLaunches(std::vector<LaunchRanks>(std::make_move_iterator(queued.begin() + first),
                                           std::make_move_iterator(queued.begin() + end)));
  }
}

void RankRunner::StartLaunches(const std::vector<LaunchRanks>& launches) {
  struct Planned {
    const LaunchRanks* launch;
    int master_port;
    size_t first_request;  // its ranks' requests, in rank order
    std::vector<int> outputs;
  };
  std::vector<Planned> planned;
  std::vector<SpawnRequest> requests;
  for (const LaunchRanks& launch : launches) {
    if (stopping_) {
      // The head may have sent it before it heard that this node drains.
      LOG_INFO("job {} attempt {}: not launched, this node agent is stopping", launch.job_id(), launch.attempt());
      ReportNotStarted(launch, 0, SIGTERM, "");
      continue;
    }
    // The gang is all here: its MASTER_PORT is picked now, as it starts.
    const int master_port = launch.pick_master_port() ? planner_.FreePort() : 0;
    std::vector<SpawnRequest> own = planner_.Plan(launch, master_port);
    // Each rank's stdout and stderr: a pipe, read on this loop into logs_.
    auto pipes = OpenOutputPipes(&own);
    if (!pipes.ok()) {  // out of descriptors: none of the node's ranks starts
      LOG_WARN("job {} attempt {}: {}", launch.job_id(), launch.attempt(), pipes.status().message());
      ReportNotStarted(launch, 127, 0, pipes.status().message());
      continue;
    }
    planned.push_back({&launch, master_port, requests.size(), std::move(*pipes)});
    for (SpawnRequest& request : own) requests.push_back(std::move(request));
  }
  if (requests.empty()) return;
  // All at once: they start back to back, side by side where the launcher
  // can, while the records below are written.
  std::vector<Result<pid_t>> spawned = launcher_->SpawnAll(requests);
  for (size_t i = 0; i < requests.size(); ++i) close(requests[i].output_fd);  // the rank holds its own copy
  for (const Planned& p : planned) {
    const LaunchRanks& launch = *p.launch;
    for (int i = 0; i < launch.ranks_size(); ++i) {
      const Result<pid_t>& result = spawned[p.first_request + static_cast<size_t>(i)];
      const int rank_number = launch.ranks(i).rank();
      if (!result.ok()) {
        close(p.outputs[static_cast<size_t>(i)]);
        const std::string& why = result.status().message();
        LOG_WARN("job {} attempt {} rank {}: {}", launch.job_id(), launch.attempt(), rank_number, why);
        reports_.Report(RankExit(launch.job_id(), launch.attempt(), rank_number, 127, 0, why));
        continue;
      }
      Rank rank;
      rank.job_id = launch.job_id();
      rank.attempt = launch.attempt();
      rank.rank = rank_number;
      rank.pid = *result;
      rank.output = p.outputs[static_cast<size_t>(i)];
      rank.cap = RankOutputCap(launch.log_limit_bytes(), launch.log_tail_bytes());
      ranks_.push_back(rank);
      hang_.activity().Started(rank.job_id, rank.attempt, rank.rank, rank.pid, clock_->NowMicros());
      AgentMessage message;
      auto* started = message.mutable_rank_started();
      started->set_job_id(rank.job_id);
      started->set_attempt(rank.attempt);
      started->set_rank(rank.rank);
      started->set_pid(rank.pid);
      started->set_master_port(p.master_port);
      reports_.Report(message);
    }
  }
}

void RankRunner::Kill(const KillRanks& kill) {
  launches_.Cancel(kill.job_id(), kill.attempt());
  for (auto queued = queued_.begin(); queued != queued_.end();) {
    if (queued->job_id() != kill.job_id() || queued->attempt() != kill.attempt()) {
      ++queued;
      continue;
    }
    const LaunchRanks cancelled = std::move(*queued);
    queued = queued_.erase(queued);
    ReportNotStarted(cancelled, 0, SIGTERM, "");
  }
  hang_.activity().EndAttempt(kill.job_id(), kill.attempt());  // a rank being stopped is no hang
  Micros now = clock_->NowMicros();
  for (Rank& rank : ranks_) {
    if (rank.job_id != kill.job_id() || rank.attempt != kill.attempt() || rank.kill_at != 0) continue;
    launcher_->SignalGroup(rank.pid, SIGTERM);
    rank.kill_at = now + static_cast<Micros>(std::max(kill.grace_ms(), 0)) * 1000;
  }
}

void RankRunner::ReservePort(const clusterd::ReservePort& request) {
  AgentMessage message;
  message.mutable_port_reserved()->set_job_id(request.job_id());
  message.mutable_port_reserved()->set_attempt(request.attempt());
  message.mutable_port_reserved()->set_port(planner_.FreePort());
  reports_.SendUnkept(message);
}

bool RankRunner::Holds(const std::string& job_id, int attempt) const {
  auto ours = [&](const auto& item) { return item.job_id == job_id && item.attempt == attempt; };
  auto queued = [&](const LaunchRanks& launch) { return launch.job_id() == job_id && launch.attempt() == attempt; };
  return std::any_of(ranks_.begin(), ranks_.end(), ours) || std::any_of(queued_.begin(), queued_.end(), queued) ||
         leftovers_.Holds(job_id, attempt) || launches_.Holds(job_id, attempt);
}

std::vector<LiveRank> RankRunner::LiveRanks() const {
  std::vector<LiveRank> out;
  for (const Rank& rank : ranks_) {
    LiveRank live;
    live.set_job_id(rank.job_id);
    live.set_attempt(rank.attempt);
    live.set_rank(rank.rank);
    live.set_pid(rank.pid);
    out.push_back(live);
  }
  return out;
}

void RankRunner::StopAll(int grace_ms) {
  stopping_ = true;
  launches_.CancelAll();
  for (const LaunchRanks& launch : std::exchange(queued_, {})) ReportNotStarted(launch, 0, SIGTERM, "");
  Micros now = clock_->NowMicros();
  for (Rank& rank : ranks_) {
    launcher_->SignalGroup(rank.pid, grace_ms > 0 ? SIGTERM : SIGKILL);
    Micros at = now + static_cast<Micros>(std::max(grace_ms, 0)) * 1000;
    rank.kill_at = rank.kill_at == 0 ? at : std::min(rank.kill_at, at);
  }
}

void RankRunner::Finished(const Rank& rank, bool log_shipped, const ChildExit& exit) {
  // The group may outlive its leader (a shell's children): end it too.
  // Only the group: the leader's pid itself is free for reuse now. But not
  // while a stop's grace runs: `sh -c` dies of the SIGTERM at once, while
  // its program saves. What is left goes at the grace's end, all that is
  // in the attempt's keeper or cgroup (RankLeftovers).
  if (rank.kill_at == 0 || rank.kill_at == kKilled) launcher_->SignalGroup(rank.pid, SIGKILL);
  AgentMessage message = RankExit(rank.job_id, rank.attempt, rank.rank, exit.exit_code, exit.signal, "");
  auto* exited = message.mutable_rank_exited();
  exited->set_out_of_memory(exit.out_of_memory);
  exited->set_memory_limit_bytes(exit.memory_limit_bytes);
  exited->set_log_tail(logs_.Tail(LogName(rank), rank.rank, options_.log_tail_lines));
  if (log_shipped) logs_.Release(LogName(rank), rank.rank);
  LOG_INFO("job {} attempt {} rank {} (pid {}) {}", rank.job_id, rank.attempt, rank.rank, rank.pid,
           exited->signal() ? fmt::format("killed by signal {}{}", exited->signal(),
                                          exit.out_of_memory ? " (out of memory)" : "")
                            : fmt::format("exited {}", exited->exit_code()));
  if (rank.record_slot) records_.Clear(*rank.record_slot);
  // The head is away or behind: its log goes first, then its exit.
  if (!log_shipped) unshipped_.push_back(rank);
  if (take_exit_ && take_exit_(message)) return;  // reported later, through ReportKept
  if (log_shipped) {
    reports_.Report(message);
  } else {
    reports_.Keep(std::move(message));
  }
}

Micros RankRunner::Tick() {
  if (reports_.kept() > 0) FlushUnreported();
  // Exits first, so a rank's last log bytes ship before its exit is told.
  for (const ChildExit& exit : launcher_->Reap()) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.pid == exit.pid; });
    if (it == ranks_.end()) continue;  // an orphan of some rank, handed to the agent as subreaper
    Rank rank = std::move(*it);
    ranks_.erase(it);
    hang_.activity().Ended(rank.job_id, rank.attempt, rank.rank);
    // All it wrote before it exited is in the pipe. What its group's other
    // processes print from now on is not kept: Finished ends them.
    TakeOutput(rank);
    if (rank.output >= 0) close(rank.output);
    rank.output = -1;
    FinishOutput(rank);
    Finished(rank, ShipLog(rank), exit);
    // The attempt's last rank here is gone: so must be what its ranks
    // started outside their groups, at its stop's grace's end (RankLeftovers).
    bool last = std::none_of(ranks_.begin(), ranks_.end(), [&](const Rank& other) {
      return other.job_id == rank.job_id && other.attempt == rank.attempt;
    });
    if (last) {
      leftovers_.Add(rank.job_id, rank.attempt, rank.kill_at == kKilled ? 0 : rank.kill_at);
      hang_.activity().EndAttempt(rank.job_id, rank.attempt);
    }
  }
  Micros now = clock_->NowMicros();
  Micros next = leftovers_.KillDue(now);
  if (!launches_.nothing_waiting()) {
    launches_.ReleaseDue([this](const LaunchRanks& l) { return EarlierAttemptHere(l); },
                         [this](const LaunchRanks& launch, bool cancelled) {
                           if (cancelled) {
                             ReportNotStarted(launch, 0, SIGTERM, "");
                           } else {
                             Launch(launch);
                           }
                         });
  }
  for (Rank& rank : ranks_) {
    if (!rank.record_slot) rank.record_slot = records_.Record(rank.pid);
    TakeOutput(rank);
    ShipLog(rank);
    if (rank.kill_at != 0 && now >= rank.kill_at) {
      launcher_->SignalGroup(rank.pid, SIGKILL);
      rank.kill_at = kKilled;  // once; it goes as soon as the kernel is done with it
    }
    if (rank.kill_at != 0 && rank.kill_at != kKilled && (next == 0 || rank.kill_at < next)) {
      next = rank.kill_at;
    }
  }
  const Micros hang_watch = hang_.Tick(
      now, [this](const AgentMessage& message) { return reports_.SendUnkept(message); },
      [this](const std::string& job_id, int attempt, int rank_index, int lines) {
        Rank named;
        named.job_id = job_id;
        named.attempt = attempt;
        named.rank = rank_index;
        for (Rank& rank : ranks_) {
          // What it printed since the last tick (its Python stacks) first.
          if (rank.job_id == job_id && rank.attempt == attempt && rank.rank == rank_index) TakeOutput(rank);
        }
        // One that exited meanwhile: its log is here until shipped, else
        // its exit carried its last lines to the head.
        return logs_.Tail(LogName(named), rank_index, lines);
      });
  if (hang_watch != 0 && (next == 0 || hang_watch < next)) next = hang_watch;
  return next;
}

std::vector<RankHangWatch::RankHere> RankRunner::RanksHere(const std::string& job_id, int attempt) const {
  std::vector<RankHangWatch::RankHere> here;
  for (const Rank& rank : ranks_) {
    if (rank.job_id == job_id && rank.attempt == attempt) here.push_back({rank.rank, rank.pid});
  }
  return here;
}

void RankRunner::Watch(const WatchRanks& watch) {
  hang_.Watch(watch, RanksHere(watch.job_id(), watch.attempt()), clock_->NowMicros());
}

void RankRunner::Diagnose(const DiagnoseRanks& request) {
  hang_.Diagnose(request, RanksHere(request.job_id(), request.attempt()), clock_->NowMicros());
}

}  // namespace clusterd
