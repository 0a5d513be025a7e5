// What /proc says about a process: CPU time used (all threads) and resident
// memory, and the CPU share over a window, as % of one core.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace clusterd::bench {

// utime + stime of pid in seconds; nullopt once the process is gone.
std::optional<double> CpuSeconds(pid_t pid);

// A process's CPU seconds (utime + stime, all threads) and those of the
// children it has reaped (cutime + cstime), from /proc/PID/stat.
struct ProcCpu {
  double own = 0;
  double reaped_children = 0;
};
std::optional<ProcCpu> CpuOf(pid_t pid);

// The processes whose parent is `parent` and whose command name is `comm`.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm);
// VmRSS (and VmHWM, the peak) of pid in MiB.
std::optional<double> RssMiB(pid_t pid);
std::optional<double> PeakRssMiB(pid_t pid);

// Measures CPU share of several processes over the same window: Start(),
// wait, then Percent(i) = CPU seconds used / wall seconds * 100.
class CpuWindow {
 public:
  explicit CpuWindow(std::initializer_list<pid_t> pids);
  bool Start();
  bool Stop();
  double Percent(size_t i) const;
  double WallSeconds() const { return wall_s_; }

 private:
  std::vector<pid_t> pids_;
  std::vector<double> start_cpu_, used_cpu_;
  std::chrono::steady_clock::time_point start_;
  double wall_s_ = 0;
};

}  // namespace clusterd::bench
