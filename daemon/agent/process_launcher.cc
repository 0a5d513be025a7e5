#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/file_util.h"
#include "common/logging.h"
#include "daemon/agent/launcher.h"

namespace clusterd {

namespace {

// pid -> parent pid of every live (not zombie) process, from /proc.
std::multimap<pid_t, pid_t> ChildrenByParent() {
  std::multimap<pid_t, pid_t> children;
  DIR* proc = opendir("/proc");
  if (!proc) return children;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    // A process may exit between readdir and read: then it is not a child.
    std::string stat = ReadWholeFile(std::string("/proc/") + entry->d_name + "/stat").value_or("");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (!(rest >> state >> ppid) || state == 'Z' || state == 'X') continue;
    children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  closedir(proc);
  return children;
}

// Every live process below this one, at any depth.
std::vector<pid_t> Descendants() {
  std::multimap<pid_t, pid_t> children = ChildrenByParent();
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {getpid()};
  while (!todo.empty()) {
    pid_t parent = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

bool HasEnvironmentEntry(const std::string& environ, const std::string& entry) {
  std::string wanted = entry;
  wanted.push_back('\0');
  size_t at = environ.find(wanted);
  while (at != std::string::npos) {
    if (at == 0 || environ[at - 1] == '\0') return true;
    at = environ.find(wanted, at + 1);
  }
  return false;
}

}  // namespace

ProcessLauncher::ProcessLauncher() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    LOG_WARN("cannot make the node agent a child subreaper ({}): a rank's processes that leave its process "
             "group may outlive `clusterd stop`", std::strerror(errno));
  }
}

Result<pid_t> ProcessLauncher::Spawn(const SpawnRequest& request) { return SpawnProcess(request); }

// The group only, never the pid alone: after the leader is reaped its pid
// may be another process's, while the group id stays taken until the group is empty.
void ProcessLauncher::SignalGroup(pid_t pid, int signal_number) {
  if (pid > 1) kill(-pid, signal_number);
}

std::vector<ChildExit> ProcessLauncher::Reap() {
  std::vector<ChildExit> exits;
  while (true) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    ChildExit exit;
    exit.pid = pid;
    exit.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    exit.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    exits.push_back(exit);
  }
  return exits;
}

pid_t ProcessLauncher::GroupOf(pid_t pid) { return pid > 0 ? getpgid(pid) : -1; }

int ProcessLauncher::KillDescendants() {
  std::vector<pid_t> all = Descendants();
  for (pid_t pid : all) kill(pid, SIGKILL);
  return static_cast<int>(all.size());
}

int ProcessLauncher::KillLeftovers(const std::string& job_id, int attempt) {
  int found = 0;
  for (pid_t pid : Descendants()) {
    std::string env = ReadWholeFile("/proc/" + std::to_string(pid) + "/environ").value_or("");
    if (!HasEnvironmentEntry(env, "CLUSTER_JOB_ID=" + job_id) ||
        !HasEnvironmentEntry(env, "CLUSTER_ATTEMPT=" + std::to_string(attempt))) {
      continue;
    }
    kill(pid, SIGKILL);
    ++found;
  }
  return found;
}

}  // namespace clusterd
