#include "daemon/agent/descendants.h"

#include <dirent.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "common/file_util.h"

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

}  // namespace

std::vector<pid_t> Descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children = ChildrenByParent();
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {root};
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

std::optional<std::vector<pid_t>> MainThreadChildren(pid_t pid) {
  auto text = ReadWholeFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  if (!text.ok()) return std::nullopt;
  std::vector<pid_t> out;
  std::istringstream in(*text);
  for (long child; in >> child;) out.push_back(static_cast<pid_t>(child));
  return out;
}

}  // namespace clusterd
