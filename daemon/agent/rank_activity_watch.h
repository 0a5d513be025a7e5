// Hang detection on a node (docs/RELIABILITY.md "Hung gangs"): follows the
// activity of the ranks of attempts the head asked it to watch
// (WatchRanks) and says when one goes idle (no line printed, no report,
// no CPU used by any of its processes for idle_after_ms) and when an idle
// one is active again. It says nothing while a rank stays as it was, so a
// busy gang costs no messages; the head, which sees the whole gang,
// decides whether it is hung.
// Time comes from the caller and CPU times are handed in, so unit tests
// drive it with a fake clock and made-up CPU times.
// NOT thread-safe: the rank runner's loop owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"

namespace clusterd {

class RankActivityWatch {
 public:
  // Ranks of this attempt that run here, and those that start later, are
  // watched from `now`.
  void Watch(const WatchRanks& watch, Micros now);
  // A rank started: watched when its attempt is.
  void Started(const std::string& job_id, int attempt, int rank, pid_t pid, Micros now);
  // It printed or reported: active at `now`.
  void Touched(const std::string& job_id, int attempt, int rank, Micros now);
  // It exited: no longer watched; its attempt's watch ends with its last rank here.
  void Ended(const std::string& job_id, int attempt, int rank);
  // An attempt's ranks are all gone from this node (killed, or ended).
  void EndAttempt(const std::string& job_id, int attempt);

  // The watched ranks' pids, for a CPU reading.
  std::vector<pid_t> Pids() const;
  // A reading of each watched rank's process tree's CPU time (a pid left
  // out: its rank is gone, nothing changes). A rank whose CPU time
  // changed since the last reading was active at `now`.
  void TakeCpu(const std::map<pid_t, int64_t>& cpu_ticks, Micros now);
  // The ranks that went idle by `now`, and those active again, not yet
  // told: each becomes a message, marked told once `send` takes it (one it
  // does not take is offered again at the next call).
  void Report(Micros now, const std::function<bool(const AgentMessage&)>& send);
  // The head may have lost what it was told (it restarted, or the stream
  // broke): every idle rank is told again at the next Report.
  void RetellIdle();

  bool empty() const { return ranks_.empty(); }
  // When Report next has something to say at the latest (a watched rank's
  // idle time running out), 0 when nothing is watched.
  Micros NextDue() const;

 private:
  using Key = std::tuple<std::string, int, int>;  // job, attempt, rank
  struct Watched {
    pid_t pid = 0;
    Micros idle_after = 0;
    Micros last_active = 0;
    std::optional<int64_t> cpu_ticks;  // at the last reading
    bool idle = false;                 // as last told to the head
    bool told = true;                  // whether `idle` reached the head
  };
  void MarkActive(Watched& watched, Micros now);

  std::map<std::pair<std::string, int>, Micros> attempts_;  // watched attempts: their idle_after
  std::map<Key, Watched> ranks_;
};

}  // namespace clusterd
