// What the ranks of an attempt left behind outside their process groups
// (setsid, double forks): killed once the attempt's last rank here has
// ended, or it would run on until the agent stops. Not before a stop's
// grace is over, though: a string entrypoint's `sh -c` dies of the SIGTERM
// at once while its program is still saving within the grace.
// Not thread-safe: the rank runner owns it, on the node agent's loop.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/agent/launcher.h"

namespace clusterd {

class RankLeftovers {
 public:
  // REQUIRES: launcher outlives this object.
  explicit RankLeftovers(Launcher* launcher) : launcher_(launcher) {}

  // The attempt's last rank here ended; what it left is killed at
  // kill_at (the end of its stop's grace; 0: at once).
  void Add(const std::string& job_id, int attempt, Micros kill_at);
  // Kills what is due at `now`, and at once all that is owed where nothing
  // of any rank is left alive (no grace is owed to nothing). Returns the
  // next deadline, 0 for none.
  Micros KillDue(Micros now);
  // Something of this attempt waits to be killed.
  bool Holds(const std::string& job_id, int attempt) const;
  // Something of an attempt of job_id before `attempt` waits to be killed.
  bool HoldsEarlier(const std::string& job_id, int attempt) const;
  bool empty() const { return owed_.empty(); }

 private:
  struct Owed {
    std::string job_id;
    int attempt = 0;
    Micros kill_at = 0;
  };
  Launcher* launcher_;
  std::vector<Owed> owed_;
};

}  // namespace clusterd
