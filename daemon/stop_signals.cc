#include "daemon/stop_signals.h"

namespace clusterd {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

StopRequest WaitForStopSignal() {
  sigset_t set = StopSignals();
  siginfo_t info{};
  while (sigwaitinfo(&set, &info) < 0) {
  }
  StopRequest request;
  request.signal_number = info.si_signo;
  if (info.si_code == SI_QUEUE && info.si_value.sival_int >= 0) request.grace_ms = info.si_value.sival_int;
  return request;
}

int SendStopSignal(pid_t pid, int grace_ms) {
  sigval value{};
  value.sival_int = grace_ms;
  return sigqueue(pid, SIGTERM, value);
}

}  // namespace clusterd
