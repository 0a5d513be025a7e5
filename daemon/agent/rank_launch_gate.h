// The launches this node has been told of and not yet started: those whose
// code is still being fetched (expected), and those whose code is ready
// while ranks of an earlier attempt of their job still run here or wait
// for their stop's grace (waiting). Two attempts of one job never run side
// by side in the job's folder: a waiting launch starts once the earlier
// one is gone. A Kill of its attempt, or a stop of the agent, cancels it,
// and the runner then reports its ranks as stopped.
// Not thread-safe: the rank runner owns it, on the node agent's loop.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"

namespace clusterd {

class RankLaunchGate {
 public:
  // Whether ranks of an earlier attempt of the launch's job are still here.
  using EarlierAttemptHereFn = std::function<bool(const LaunchRanks&)>;
  // What becomes of a launch whose code is ready.
  enum class Ready {
    kStart,      // start it now
    kCancelled,  // report its ranks as stopped
    kWaits,      // it waits for an earlier attempt (StartDue)
  };

  // Its code is being fetched: a Cancel meanwhile cancels it.
  void Expect(const LaunchRanks& launch);
  Ready Prepared(const LaunchRanks& launch, const EarlierAttemptHereFn& earlier_attempt_here);
  // Its code could not be made ready: the gate forgets it.
  void Failed(const LaunchRanks& launch);
  // A Kill of this attempt: its launch, expected or waiting, will not start.
  void Cancel(const std::string& job_id, int attempt);
  // The agent stops: no launch told of so far starts.
  void CancelAll();
  // Hands each waiting launch whose earlier attempt is gone, or that was
  // cancelled, to `release` (with whether it was cancelled), in the order
  // they came, and forgets it.
  void ReleaseDue(const EarlierAttemptHereFn& earlier_attempt_here,
                  const std::function<void(const LaunchRanks&, bool cancelled)>& release);
  // An expected or waiting launch of this attempt.
  bool Holds(const std::string& job_id, int attempt) const;
  bool nothing_waiting() const { return waiting_.empty(); }

 private:
  using Key = std::pair<std::string, int>;  // (job, attempt)
  static Key KeyOf(const LaunchRanks& launch) { return {launch.job_id(), launch.attempt()}; }

  std::map<Key, bool> pending_;       // expected or waiting -> cancelled
  std::vector<LaunchRanks> waiting_;  // each has its pending_ entry until it is released
};

}  // namespace clusterd
