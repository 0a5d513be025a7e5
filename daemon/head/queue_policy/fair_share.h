// Fair share among users (Slurm's fair-share factor): what each user's
// running jobs held, in GPU-seconds and CPU-seconds, decaying with a
// half-life, so that a burst long ago counts for little. Among jobs of one
// priority, the user with the least usage of their share goes first; on
// equal usage (everyone new), the one holding the least right now.
// A user's share is 1: usage is compared as is.
// Exact on the injected clock: each account is brought up to date when its
// rate changes or it is read, with the integral of the decayed rate.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>
#include <unordered_map>

#include "common/clock.h"

namespace clusterd {

// A user's place in the fair-share order: compared field by field, less first.
struct FairShareStanding {
  double gpu_seconds = 0;  // decayed
  double cpu_seconds = 0;
  double gpus_now = 0;     // held by their running jobs
  double cpus_now = 0;
};
bool operator<(const FairShareStanding& a, const FairShareStanding& b);

class FairShare {
 public:
  // half_life <= 0: nothing is remembered, only what runs now counts.
  // REQUIRES: clock outlives this object.
  FairShare(const Clock* clock, Micros half_life) : clock_(clock), half_life_(half_life) {}

  // A job of `user` started (sign 1) or ended (sign -1) holding this much.
  void Charge(const std::string& user, double gpus, double cpus, int sign);
  FairShareStanding StandingOf(const std::string& user) const;

 private:
  struct Account {
    FairShareStanding standing;
    Micros at = 0;  // when `standing`'s usage was last brought up to date
  };
  void BringUpToDate(Account& account, Micros now) const;

  const Clock* clock_;
  Micros half_life_;
  mutable std::unordered_map<std::string, Account> accounts_;
};

}  // namespace clusterd
