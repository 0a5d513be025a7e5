// The share of a machine's CPU time that was busy between two reads of
// /proc/stat: the kernel counts each CPU state's time in jiffies since boot,
// so a fraction needs two reads and their difference.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace clusterd {

// The aggregate "cpu" line of /proc/stat, summed into busy and total.
struct CpuJiffies {
  uint64_t busy = 0;   // user, nice, system, irq, softirq, steal
  uint64_t total = 0;  // busy plus idle and iowait
};

// Reads the first "cpu " line of /proc/stat's text. nullopt when there is
// none or it holds fewer than the four fields every kernel writes.
std::optional<CpuJiffies> ParseProcStatCpu(const std::string& proc_stat);

// Busy share (0..1) of the time between `before` and `after`. nullopt
// when no time passed or the counters went backwards (a different boot,
// a counter that wrapped): no figure is better than a wrong one.
std::optional<double> BusyFractionBetween(const CpuJiffies& before, const CpuJiffies& after);

// Remembers the last read, so each call gives the busy share since the
// previous one: the first call, and one after /proc/stat was unreadable,
// give nullopt. Safe to call from several threads.
class CpuUtilizationMeter {
 public:
  // proc_stat_path: /proc/stat, or a file that stands in for it in tests.
  explicit CpuUtilizationMeter(std::string proc_stat_path = "/proc/stat");

  std::optional<double> Sample();

 private:
  const std::string proc_stat_path_;
  std::mutex mutex_;
  std::optional<CpuJiffies> last_;
};

}  // namespace clusterd
