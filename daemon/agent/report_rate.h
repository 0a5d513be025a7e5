// How fast each rank may report: a token bucket per rank, refilled at
// `per_second` up to `burst`. A report over the rate is held back (its
// answer waits until the bucket has a token again), not dropped: like Ray
// Train's report(), which blocks until the trainer takes the result, a
// rank calling report() in a tight loop is slowed to the rate and loses no
// value, its last one included. Only when the wait would be longer than
// `max_hold` (the rank has several reports in flight at once, or the rate
// is very low) is the report refused, with an error the rank sees.
// Thread-safe: each connection's thread asks for itself.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace clusterd {

class ReportRate {
 public:
  // `per_second` <= 0: no limit. `burst` < 1 is taken as 1.
  ReportRate(const Clock* clock, int per_second, int burst, Micros max_hold);

  // Takes a token for one report of `rank` (any key that names one rank):
  // how long to hold the report back before it goes on (0: at once), or
  // ResourceExhausted when that would be longer than max_hold (no token
  // is taken then).
  Result<Micros> Take(const std::string& rank);

  size_t ranks_tracked() const;

 private:
  struct Bucket {
    double tokens = 0;  // may go below zero: reports held back, each owed a token
    Micros at = 0;      // when `tokens` was last brought up to date
  };
  // Forgets the buckets that are full again: ranks that stopped reporting,
  // or ended, cost nothing after a while.
  void ForgetFull(Micros now);

  const Clock* clock_;
  const double per_second_;
  const double burst_;
  const Micros max_hold_;
  mutable std::mutex mutex_;
  std::map<std::string, Bucket> buckets_;
  Micros next_sweep_ = 0;
};

}  // namespace clusterd
