#include "daemon/agent/cpu_utilization.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace clusterd {

std::optional<CpuJiffies> ParseProcStatCpu(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice. Guest
    // time is already inside user and nice, so it is not added again.
    std::istringstream fields(line.substr(4));
    std::vector<uint64_t> values;
    uint64_t value = 0;
    while (values.size() < 8 && fields >> value) values.push_back(value);
    if (values.size() < 4) return std::nullopt;
    values.resize(8, 0);
    CpuJiffies jiffies;
    uint64_t idle = values[3] + values[4];
    jiffies.busy = values[0] + values[1] + values[2] + values[5] + values[6] + values[7];
    jiffies.total = jiffies.busy + idle;
    return jiffies;
  }
  return std::nullopt;
}

std::optional<double> BusyFractionBetween(const CpuJiffies& before, const CpuJiffies& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  double busy = static_cast<double>(after.busy - before.busy);
  double total = static_cast<double>(after.total - before.total);
  double fraction = busy / total;
  // Busy can outgrow total only if idle went backwards, which the kernel's
  // counters do on some hypervisors; the share stays within 0..1.
  return fraction > 1 ? 1.0 : fraction;
}

CpuUtilizationMeter::CpuUtilizationMeter(std::string proc_stat_path) : proc_stat_path_(std::move(proc_stat_path)) {}

std::optional<double> CpuUtilizationMeter::Sample() {
  std::optional<CpuJiffies> now;
  std::ifstream in(proc_stat_path_);
  if (in.is_open()) {
    std::ostringstream text;
    text << in.rdbuf();
    now = ParseProcStatCpu(text.str());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<CpuJiffies> before = last_;
  last_ = now;
  if (!before || !now) return std::nullopt;
  return BusyFractionBetween(*before, *now);
}

}  // namespace clusterd
