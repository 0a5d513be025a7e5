// The ranks running on this node: launches them for the head, reaps them,
// keeps what they print (read from a pipe each, into a LogStore: no file
// per rank on the launch path) and ships it up, stops them (SIGTERM to the
// group, SIGKILL after the grace period), and lists the live ones when the
// agent registers again.
// Processes go through a Launcher and time comes from a Clock, so unit tests
// drive it with fakes: no processes, no sleeps.
// NOT thread-safe: the node agent's event loop owns it and calls Tick()
// every poll period; SendFn must not block (it queues). What each rank
// starts with is planned by a RankSpawnPlanner, launches not yet started
// wait in a RankLaunchGate, what ended attempts left behind is killed by
// RankLeftovers, and what goes to the head waits in a RankReportQueue while
// it is away. rank_output.cc holds the ranks' output and reports;
// rank_runner.cc the processes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "common/logs/log_store.h"
#include "daemon/agent/launcher.h"
#include "daemon/agent/rank_hang_watch.h"
#include "daemon/agent/rank_launch_gate.h"
#include "daemon/agent/rank_leftovers.h"
#include "daemon/agent/rank_output_cap.h"
#include "daemon/agent/rank_records.h"
#include "daemon/agent/rank_report_queue.h"
#include "daemon/agent/rank_spawn_planner.h"

namespace clusterd {

class RankRunner {
 public:
  struct Options {
    std::string logs_dir;      // a LogStore's root: the log of <job>.attempt-<a>.rank-<r>
    std::string ranks_dir;     // running ranks' process groups, for `clusterd stop`: one file a slot
    std::string socket_path;   // CLUSTER_AGENT_SOCKET for the ranks' report()
    std::string python_path;   // put first on the ranks' PYTHONPATH: the clusterd Python package's folder ("" none)
    std::string node_ip;       // where MASTER_PORT is reserved
    int log_tail_lines = Config{}.log_tail_lines;  // the config table's default
    // The user ranks run as when their job names none ("": the daemon's own).
    std::string run_as;
    // How often watched ranks' CPU time is read (hang detection).
    int hang_sample_ms = Config{}.hang_sample_ms;
  };
  // Returns whether the message was taken for the head's stream.
  using SendFn = std::function<bool(const AgentMessage&)>;
  // Returns whether it takes the exit, to report it later through
  // ReportKept (rank 0's, once its outputs are stored).
  using TakeExitFn = std::function<bool(const AgentMessage&)>;

  // REQUIRES: clock and launcher outlive this object.
  RankRunner(Options options, const Clock* clock, Launcher* launcher, SendFn send);
  ~RankRunner();  // closes the pipes of ranks still running
  RankRunner(const RankRunner&) = delete;
  RankRunner& operator=(const RankRunner&) = delete;

  // Starts the ranks in launch.working_dir(); refused (each rank reported
  // as stopped) once StopAll has begun. With a start scheduler set, the
  // launch is queued and starts at StartQueued, with every other launch
  // queued by then.
  void Launch(const LaunchRanks& launch);
  // Launches then wait for StartQueued, which `schedule` arranges (the
  // node agent posts it to its loop, so that it runs once the commands
  // already there are handled): a burst of launches reaches the launcher
  // as one batch, its keepers forking and exec'ing side by side, and the
  // agent waits once for the batch instead of once per launch.
  void SetStartScheduler(std::function<void()> schedule) { schedule_start_ = std::move(schedule); }
  // Starts the launches queued since the last call.
  void StartQueued();
  // A launch whose code is still being fetched: a Kill or StopAll meanwhile
  // cancels it, and LaunchPrepared then reports its ranks as stopped.
  void ExpectLaunch(const LaunchRanks& launch);
  void LaunchPrepared(const LaunchRanks& launch);
  // Its code could not be made ready: every rank is reported as failed to start.
  // `unrestorable`: the manifest id of the checkpoint the store lacked, or "".
  void FailLaunch(const LaunchRanks& launch, const std::string& error, const std::string& unrestorable = "");
  // Each rank's exit is offered to `take` as soon as the rank is reaped,
  // whether the head is there or not (so rank 0's outputs upload starts
  // at once, not when a head that was away is back).
  void SetExitTaker(TakeExitFn take) { take_exit_ = std::move(take); }
  // Reports a message as the runner reports its own: what must reach the
  // head (must_reach_head.h) is kept while it is away, sent once it is back;
  // an exit still goes after its rank's log.
  void ReportKept(const AgentMessage& message) { reports_.ReportKept(message); }
  void Kill(const KillRanks& kill);
  void ReservePort(const clusterd::ReservePort& request);
  std::vector<LiveRank> LiveRanks() const;
  // A report() from process `peer` (a rank, or a process it started):
  // tied to the rank it descends from (RankOfProcess: by its parents,
  // never by its process group), numbered, and sent,
  // or kept while the head is away as an exit is. Refused when peer is no
  // live rank's, or when kMaxKeptReports wait already (a head away for
  // that long costs the newest reports, not the agent's memory).
  Status TakeReport(MetricsReport* report, pid_t peer);
  // The rank process `peer` would report for, as TakeReport ties it:
  // "<job>/<attempt>/<rank>", or why it may not report.
  Result<std::string> ReporterOf(pid_t peer);
  static constexpr size_t kMaxKeptReports = RankReportQueue::kMaxKeptReports;
  // Once the head is back: ships what exited ranks printed while it was
  // away, then sends the exits that could not be sent meanwhile. Tick
  // tries again while any are left (the head's queue may have been full).
  void FlushUnreported();
  // From now on no launch starts; pending ones are cancelled, every rank
  // gets SIGTERM and, grace_ms later (at a Tick), SIGKILL.
  void StopAll(int grace_ms);
  bool stopping() const { return stopping_; }
  // No rank is running, none waits to start, and no stop's grace is still
  // owed to what a rank left (`clusterd stop` waits for it: a string
  // entrypoint's shell dies at once, its program may still be saving).
  bool idle() const {
    return ranks_.empty() && queued_.empty() && launches_.nothing_waiting() && leftovers_.empty();
  }
  // Something of this attempt is here still: a rank running, its launch
  // being prepared or waiting to start, or a stop's grace owed to what it left.
  bool Holds(const std::string& job_id, int attempt) const;
  size_t unreported() const { return reports_.kept(); }
  // Ranks whose processes run here now (the node's usage reports it).
  size_t running() const { return ranks_.size(); }

  // Hang detection (docs/RELIABILITY.md "Hung gangs", RankHangWatch).
  // The head asks to watch an attempt's ranks: each going idle, and each
  // idle one active again, is told (RankActivity).
  void Watch(const WatchRanks& watch);
  // The head found the attempt hung: its ranks' wait channels and kernel
  // stacks are read and their Python processes get SIGQUIT now; their last
  // lines go to the head (RanksDiagnosed) at a Tick wait_ms later.
  void Diagnose(const DiagnoseRanks& request);

  // Reaps exited ranks and reports them, ships new log bytes, sends the
  // SIGKILLs that are due. Returns the next deadline (monotonic micros), 0
  // for none; the caller also calls it every poll period for the reaping.
  Micros Tick();

 private:
  struct Rank {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
    pid_t pid = 0;
    int output = -1;         // the read end of its stdout and stderr, until they close
    int64_t shipped = 0;     // log bytes sent to the head
    RankOutputCap cap;       // what of its output is kept: the job's log limit
    Micros kill_at = 0;      // when SIGKILL follows a SIGTERM; 0: not stopping
    // Its RankRecords slot, from the first tick that finds it running:
    // a rank that ends sooner (within 20 ms) costs no /proc read and no
    // record written and blanked. Until then only its launcher, which kills
    // all below it when the agent goes, stands between it and an orphan.
    std::optional<size_t> record_slot;
    int64_t reports = 0;  // report() calls so far (MetricsReport.report_seq)
  };

  // Its log in logs_: the attempt's, "<job>.attempt-<a>" and the rank.
  static std::string LogName(const Rank& rank);
  // The live rank that process `pid` is or belongs to, or null.
  Rank* RankOfProcess(pid_t pid);
  static constexpr int kMaxAncestry = 64;  // parents walked up from a reporter
  // Moves what the rank printed from its pipe into logs_ (what its cap
  // keeps of it), without waiting.
  void TakeOutput(Rank& rank);
  // At its end: the tail its cap held back, after the line saying what was dropped.
  void FinishOutput(Rank& rank);
  // Sends the rank's log from `shipped` on; false when the head took not all of it.
  bool ShipLog(Rank& rank);
  // Ships the logs of exited ranks that the head was away for, releasing each once all of it is sent.
  void ShipExitedLogs();
  void ReportNotStarted(const LaunchRanks& launch, int exit_code, int signal, const std::string& error,
                        const std::string& unrestorable = "");
  // Starts these launches' ranks with one SpawnAll.
  void StartLaunches(const std::vector<LaunchRanks>& launches);
  // Reports its exit; with its log not all shipped (log_shipped false), the
  // exit waits in reports_ behind it.
  void Finished(const Rank& rank, bool log_shipped, const ChildExit& exit);
  // Whether `message` is the exit of a rank in unshipped_.
  bool WaitsForLog(const AgentMessage& message) const;
  // This attempt's ranks running here, for the hang watch.
  std::vector<RankHangWatch::RankHere> RanksHere(const std::string& job_id, int attempt) const;
  Options options_;
  LogStore logs_;
  RankRecords records_;
  RankSpawnPlanner planner_;  // what each rank starts with
  const Clock* clock_;
  Launcher* launcher_;
  TakeExitFn take_exit_;
  std::vector<Rank> ranks_;
  // What ended attempts' ranks left outside their groups, killed at their stop's grace's end.
  RankLeftovers leftovers_;
  // Launches expected, and those waiting for an earlier attempt's ranks
  // (or their leftovers' grace) to be gone: Tick starts them then.
  RankLaunchGate launches_;
  std::function<void()> schedule_start_;
  std::vector<LaunchRanks> queued_;  // ready to start at StartQueued
  bool EarlierAttemptHere(const LaunchRanks& launch) const;
  // Exited ranks whose logs the head was away for: kept in logs_ until
  // shipped, before their exits (a job's last exit ends it, and its logs
  // must be whole by then: `--follow` stops there).
  std::vector<Rank> unshipped_;
  RankReportQueue reports_;  // what goes to the head, kept while it is away
  RankHangWatch hang_;
  bool stopping_ = false;
};

}  // namespace clusterd
