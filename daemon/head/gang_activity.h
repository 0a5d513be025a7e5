// Whether a gang is hung (docs/RELIABILITY.md "Hung gangs"): what the head
// knows of one attempt's ranks' activity, from its nodes' RankActivity
// messages. A node tells only when a rank goes idle (with how long it has
// been quiet) and when an idle one is active again; a rank the head heard
// nothing of is active. The gang is hung once every rank still running has
// been idle for the job's hang_timeout_s: one active rank keeps it alive,
// whatever the others do.
// Time is the head's injected clock's (monotonic micros).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "common/clock.h"

namespace clusterd {

// How long a rank must be quiet before its node says it is idle: half the
// job's hang_timeout_s, so that the word reaches the head well before the
// gang could be hung, and a rank that pauses now and then costs at most two
// messages per half timeout.
int64_t IdleAfterMs(double hang_timeout_s);

// The longest hang_timeout_s taken as written (a year); more is clamped so
// that no deadline overflows.
constexpr double kMaxHangTimeoutS = 365.0 * 86400;

class GangActivity {
 public:
  // The rank has been quiet since `since`.
  void OnIdle(int rank, Micros since) { idle_since_[rank] = since; }
  void OnActive(int rank) { idle_since_.erase(rank); }

  // When the gang is (or will be) hung: the last activity of any of its
  // `world_size` ranks not in `exited`, plus the timeout; nullopt while one
  // of them is active, and when none runs.
  std::optional<Micros> HungAt(int world_size, const std::set<int>& exited, Micros hang_timeout) const;

 private:
  std::map<int, Micros> idle_since_;  // ranks last told idle: since when
};

}  // namespace clusterd
