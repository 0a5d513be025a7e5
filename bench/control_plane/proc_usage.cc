#include "proc_usage.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace clusterd::bench {

std::optional<double> CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces; count fields after its ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int index = 3; rest >> field; ++index) {  // field 3 is the state
    if (index == 14) utime = std::stoull(field);
    if (index == 15) {
      stime = std::stoull(field);
      return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
  }
  return std::nullopt;
}

namespace {

std::optional<double> StatusKiB(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1));
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> RssMiB(pid_t pid) {
  auto kib = StatusKiB(pid, "VmRSS");
  if (!kib) return std::nullopt;
  return *kib / 1024.0;
}

std::optional<double> PeakRssMiB(pid_t pid) {
  auto kib = StatusKiB(pid, "VmHWM");
  if (!kib) return std::nullopt;
  return *kib / 1024.0;
}

CpuWindow::CpuWindow(std::initializer_list<pid_t> pids) : pids_(pids) {}

bool CpuWindow::Start() {
  start_cpu_.clear();
  for (pid_t pid : pids_) {
    auto cpu = CpuSeconds(pid);
    if (!cpu) return false;
    start_cpu_.push_back(*cpu);
  }
  start_ = std::chrono::steady_clock::now();
  return true;
}

bool CpuWindow::Stop() {
  wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  used_cpu_.clear();
  for (size_t i = 0; i < pids_.size(); ++i) {
    auto cpu = CpuSeconds(pids_[i]);
    if (!cpu) return false;
    used_cpu_.push_back(*cpu - start_cpu_[i]);
  }
  return true;
}

double CpuWindow::Percent(size_t i) const { return wall_s_ > 0 ? used_cpu_.at(i) / wall_s_ * 100.0 : 0; }

}  // namespace clusterd::bench
