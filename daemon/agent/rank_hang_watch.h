// A node's part in finding hung gangs (docs/RELIABILITY.md "Hung gangs"):
// the activity of the ranks of attempts the head asked it to watch
// (RankActivityWatch, with their process trees' CPU time read from /proc
// every sample_ms), and the diagnosis of an attempt the head found hung:
// each rank's wait channel and kernel stack, SIGQUIT to its Python
// processes that catch it, then, a bounded wait later, its last lines.
// RankRunner owns one and tells it of its ranks; this holds no rank itself.
// NOT thread-safe: the agent's loop owns it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"
#include "daemon/agent/rank_activity_watch.h"

namespace clusterd {

class RankHangWatch {
 public:
  // A rank of the attempt as it runs on this node.
  struct RankHere {
    int rank = 0;
    pid_t pid = 0;
  };
  // Sends to the head now, or false when it is away (nothing is kept).
  using SendFn = std::function<bool(const AgentMessage& message)>;
  // A rank's last `lines` lines, with what it printed up to now.
  using TailFn = std::function<std::string(const std::string& job_id, int attempt, int rank, int lines)>;

  explicit RankHangWatch(int sample_ms) : sample_ms_(sample_ms) {}

  // The runner's hooks: ranks starting, printing, reporting and ending.
  RankActivityWatch& activity() { return activity_; }

  // The head asks to watch an attempt, whose ranks `here` run already.
  void Watch(const WatchRanks& watch, const std::vector<RankHere>& here, Micros now);
  // The head found the attempt hung: probes and signals its ranks `here`
  // now; their last lines go with the answer at a Tick wait_ms later.
  void Diagnose(const DiagnoseRanks& request, const std::vector<RankHere>& here, Micros now);
  // Reads the watched ranks' CPU time when due, tells what went idle or
  // active, and answers the diagnoses whose wait is over; returns its next
  // deadline, 0 for none.
  Micros Tick(Micros now, const SendFn& send, const TailFn& tail);

 private:
  struct PendingDiagnosis {
    RanksDiagnosed answer;  // all but each rank's last lines
    Micros due = 0;
    int tail_lines = 0;
  };
  int sample_ms_;
  RankActivityWatch activity_;
  Micros next_cpu_reading_ = 0;
  std::vector<PendingDiagnosis> diagnoses_;
};

}  // namespace clusterd
