#include "daemon/agent/rank_probe.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/file_util.h"

namespace clusterd {

namespace {

struct ProcStat {
  pid_t ppid = 0;
  int64_t cpu_ticks = 0;  // utime + stime + cutime + cstime
};

// "pid (comm) state ppid ..." as /proc/PID/stat writes it (comm may hold
// spaces and parentheses); false for a zombie or an unreadable file.
bool ParseStat(const std::string& stat, ProcStat* out) {
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(stat.substr(close + 1));
  char state = 0;
  long long ppid = 0;
  if (!(rest >> state >> ppid) || state == 'Z' || state == 'X') return false;
  // Fields 5..13 (pgrp .. cmajflt), then utime stime cutime cstime (14..17).
  long long skip = 0;
  for (int i = 0; i < 9; ++i) rest >> skip;
  long long utime = 0, stime = 0, cutime = 0, cstime = 0;
  if (!(rest >> utime >> stime >> cutime >> cstime)) return false;
  out->ppid = static_cast<pid_t>(ppid);
  out->cpu_ticks = utime + stime + cutime + cstime;
  return true;
}

std::map<pid_t, ProcStat> ScanProc() {
  std::map<pid_t, ProcStat> all;
  DIR* proc = opendir("/proc");
  if (!proc) return all;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcStat stat;
    // A process may exit between readdir and read: then it is not counted.
    if (ParseStat(ReadWholeFile(std::string("/proc/") + entry->d_name + "/stat").value_or(""), &stat)) {
      all[static_cast<pid_t>(pid)] = stat;
    }
  }
  closedir(proc);
  return all;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool IsPythonExecutable(pid_t pid) {
  char target[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  std::string path(target, static_cast<size_t>(n));
  std::string base = path.substr(path.rfind('/') + 1);
  return base.rfind("python", 0) == 0;
}

// Whether the process has a handler for `signal`: its bit in the
// hexadecimal SigCgt mask of /proc/PID/status.
bool Catches(pid_t pid, int signal) {
  const std::string status = ReadWholeFile("/proc/" + std::to_string(pid) + "/status").value_or("");
  const size_t at = status.find("SigCgt:");
  if (at == std::string::npos) return false;
  const unsigned long long mask = std::strtoull(status.c_str() + at + 7, nullptr, 16);
  return (mask >> (signal - 1)) & 1ULL;
}

ProcessProbe Probe(pid_t pid) {
  ProcessProbe probe;
  probe.pid = pid;
  const std::string dir = "/proc/" + std::to_string(pid);
  probe.name = Trimmed(ReadWholeFile(dir + "/comm").value_or("?"));
  probe.python = IsPythonExecutable(pid);
  probe.catches_sigquit = Catches(pid, SIGQUIT);
  auto wchan = ReadWholeFile(dir + "/wchan");
  if (!wchan.ok()) {
    probe.wait_channel = "unreadable";
  } else {
    probe.wait_channel = Trimmed(*wchan);
    if (probe.wait_channel.empty() || probe.wait_channel == "0") probe.wait_channel = "running";
  }
  auto stack = ReadWholeFile(dir + "/stack");
  probe.kernel_stack = stack.ok() && !Trimmed(*stack).empty() ? Trimmed(*stack) : "unreadable";
  return probe;
}

}  // namespace

std::map<pid_t, int64_t> ProcessTreeCpuTicks(const std::vector<pid_t>& roots) {
  std::map<pid_t, int64_t> out;
  if (roots.empty()) return out;
  const std::map<pid_t, ProcStat> all = ScanProc();
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, stat] : all) children.emplace(stat.ppid, pid);
  for (pid_t root : roots) {
    if (!all.count(root)) continue;
    int64_t total = 0;
    std::vector<pid_t> todo = {root};
    while (!todo.empty()) {
      pid_t at = todo.back();
      todo.pop_back();
      total += all.at(at).cpu_ticks;
      auto [begin, end] = children.equal_range(at);
      for (auto it = begin; it != end; ++it) todo.push_back(it->second);
    }
    out[root] = total;
  }
  return out;
}

std::vector<ProcessProbe> ProbeProcessTree(pid_t root, size_t limit) {
  const std::map<pid_t, ProcStat> all = ScanProc();
  if (!all.count(root)) return {};  // gone (or a zombie): nothing to probe
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, stat] : all) children.emplace(stat.ppid, pid);
  std::vector<ProcessProbe> out;
  std::vector<pid_t> level = {root};  // breadth first: parents before children
  while (!level.empty() && out.size() < limit) {
    std::vector<pid_t> next;
    for (pid_t pid : level) {
      if (out.size() >= limit) break;
      out.push_back(Probe(pid));
      auto [begin, end] = children.equal_range(pid);
      for (auto it = begin; it != end; ++it) next.push_back(it->second);
    }
    level = std::move(next);
  }
  return out;
}

const ProcessProbe& MostTelling(const std::vector<ProcessProbe>& tree) {
  auto python = std::find_if(tree.begin(), tree.end(), [](const ProcessProbe& p) { return p.python; });
  if (python != tree.end()) return *python;
  return tree.back();
}

}  // namespace clusterd
