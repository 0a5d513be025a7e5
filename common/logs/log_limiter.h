// A cap on how often one kind of log line is written: anyone who can reach
// a port can make the daemon refuse them as fast as they connect, and a
// line per refusal would fill the head's log at 6 GB an hour. The first
// `burst` lines of each window go out; the rest are counted and the count
// rides on the next line let through.
// Times are the caller's (Micros on a steady clock). Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "common/clock.h"

namespace clusterd {

class LogLimiter {
 public:
  LogLimiter(int burst, Micros window) : burst_(burst), window_(window) {}
  // Whether a line may be written now. When it may, *held_back is how many
  // were not written since the last one that was (0 otherwise).
  bool Allow(Micros now, int64_t* held_back);

 private:
  const int burst_;
  const Micros window_;
  std::mutex mutex_;
  Micros window_start_ = -1;
  int written_ = 0;
  int64_t held_back_ = 0;
};

}  // namespace clusterd
