// "This pid is still the process we started": a pid file or a rank's group
// file records the pid with the process's start time and session, because a
// pid is reused once its process is gone, and `clusterd stop` must never
// signal a stranger (or, with a pgid of 0 or 1, everyone).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clusterd {

struct ProcessRecord {
  pid_t pid = 0;
  uint64_t start_time = 0;  // clock ticks after boot (/proc/PID/stat field 22)
  pid_t session = 0;
  pid_t parent = 0;  // not in the files: only Of() fills it

  // The record of a running process; an empty record (pid 0) when it is gone.
  static ProcessRecord Of(pid_t pid);
  // "pid start_time session", as written to the files.
  std::string Format() const;
  // A line written by Format(); InvalidArgument for anything else, including
  // a pid of 0 or 1 (kill(-1) and kill(0) would reach far beyond a job).
  static Result<ProcessRecord> Parse(const std::string& text);

  // Whether the process that `pid` names now is the one recorded.
  bool StillRunning() const;
};

}  // namespace clusterd
