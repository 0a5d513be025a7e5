// How a daemon is told to stop: SIGTERM, SIGINT or SIGHUP, blocked in every
// thread and taken by the main thread. `clusterd stop --grace-period S`
// sends its SIGTERM with sigqueue, the ranks' grace in milliseconds as the
// signal's value; a plain kill (systemd, a terminal) carries none.
#pragma once

#include <signal.h>

#include <optional>

namespace clusterd {

// The signals that stop a daemon: SIGTERM, SIGINT, SIGHUP.
sigset_t StopSignals();

struct StopRequest {
  int signal_number = 0;
  std::optional<int> grace_ms;  // the ranks' grace that `clusterd stop --grace-period` asked for
};

// Waits for a stop signal. REQUIRES: StopSignals() blocked in every thread.
StopRequest WaitForStopSignal();

// Sends `pid` a SIGTERM that asks for `grace_ms` as the ranks' grace.
int SendStopSignal(pid_t pid, int grace_ms);

}  // namespace clusterd
