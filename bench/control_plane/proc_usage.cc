#include "proc_usage.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace clusterd::bench {

namespace {

// The fields of /proc/PID/stat after the command name, which may hold
// spaces or parentheses (hence after its last ')'); fields[0] is field 3,
// the state. The name itself in *comm when asked for.
std::optional<std::vector<std::string>> StatFields(pid_t pid, std::string* comm = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  if (comm) *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

double Ticks(const std::string& field) {
  return static_cast<double>(std::stoull(field)) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

std::optional<ProcCpu> CpuOf(pid_t pid) {
  auto fields = StatFields(pid);
  if (!fields || fields->size() < 15) return std::nullopt;
  // utime, stime, cutime, cstime are fields 14-17.
  return ProcCpu{Ticks((*fields)[11]) + Ticks((*fields)[12]), Ticks((*fields)[13]) + Ticks((*fields)[14])};
}

std::optional<double> CpuSeconds(pid_t pid) {
  auto cpu = CpuOf(pid);
  if (!cpu) return std::nullopt;
  return cpu->own;
}

std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    std::string its_comm;
    auto fields = StatFields(pid, &its_comm);
    // fields[1] is field 4, the parent's pid.
    if (fields && fields->size() > 1 && its_comm == comm && std::stol((*fields)[1]) == parent) out.push_back(pid);
  }
  return out;
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
