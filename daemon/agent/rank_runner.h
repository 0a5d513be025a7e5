// The ranks running on this node: launches them for the head, reaps them,
// ships their logs up, stops them (SIGTERM to the group, SIGKILL after the
// grace period), and lists the live ones when the agent registers again.
// Thread-safe: commands come on the link's thread, a monitor thread polls.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"

namespace clusterd {

class RankRunner {
 public:
  struct Options {
    std::string logs_dir;      // <dir>/<job>/attempt-<a>/rank-<r>.log
    std::string ranks_dir;     // one file per running rank's process group, for `clusterd stop`
    std::string socket_path;   // CLUSTER_AGENT_SOCKET for the ranks' report()
    std::string node_ip;       // where MASTER_PORT is reserved
    int log_tail_lines = 20;
  };
  // Returns whether the message reached the head's stream.
  using SendFn = std::function<bool(const AgentMessage&)>;

  RankRunner(Options options, SendFn send);
  ~RankRunner();

  // Starts the ranks in launch.working_dir().
  void Launch(const LaunchRanks& launch);
  // A launch whose code is still being fetched: a Kill or StopAll meanwhile
  // cancels it, and LaunchPrepared then reports its ranks as stopped.
  void ExpectLaunch(const LaunchRanks& launch);
  void LaunchPrepared(const LaunchRanks& launch);
  // Its code could not be made ready: every rank is reported as failed to start.
  void FailLaunch(const LaunchRanks& launch, const std::string& error);
  // Reports a rank's exit as the runner does (kept until the head hears it).
  void ReportExit(const AgentMessage& message);
  void Kill(const KillRanks& kill);
  void ReservePort(const clusterd::ReservePort& request);
  std::vector<LiveRank> LiveRanks();
  // The rank whose process group `pid` is in (a rank or a process it
  // started), if it is one of this runner's live ranks.
  std::optional<LiveRank> RankOfProcess(pid_t pid);
  // Sends exits that could not be sent while the head was away.
  void FlushUnreported();
  // SIGTERM to every rank, SIGKILL after grace_ms; returns when all are reaped.
  void StopAll(int grace_ms);

 private:
  struct Rank {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
    pid_t pid = 0;
    std::string log_path;
    int64_t shipped = 0;     // log bytes sent to the head
    Micros kill_at = 0;      // when SIGKILL follows a SIGTERM; 0: not stopping
  };

  void MonitorLoop();
  void ShipLog(Rank& rank);
  std::string LogTail(const std::string& path) const;
  void Report(const AgentMessage& message);
  // REQUIRES: mutex_ held.
  void ReportNotStarted(const LaunchRanks& launch, int exit_code, int signal, const std::string& error);

  Options options_;
  SendFn send_;
  SystemClock clock_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Rank> ranks_;
  std::vector<AgentMessage> unreported_;
  std::map<std::pair<std::string, int>, bool> pending_;  // (job, attempt) being prepared -> cancelled
  std::atomic<bool> stopping_{false};
  std::thread monitor_;
};

}  // namespace clusterd
