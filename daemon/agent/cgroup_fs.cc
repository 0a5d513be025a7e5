#include "daemon/agent/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

namespace {

// The pid an agent's cgroup is named for ("clusterd-PID", or its own
// leaf "clusterd-PID.self"), or 0 when `name` is no such name.
long AgentPidOf(const std::string& name) {
  if (name.rfind("clusterd-", 0) != 0) return 0;
  char* end = nullptr;
  const long pid = std::strtol(name.c_str() + 9, &end, 10);
  if (pid <= 0 || end == name.c_str() + 9) return 0;
  return *end == '\0' || std::strcmp(end, ".self") == 0 ? pid : 0;
}

}  // namespace

std::vector<std::string> ChildCgroups(const std::string& folder) {
  std::vector<std::string> out;
  DIR* dir = opendir(folder.c_str());
  if (!dir) return out;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_type == DT_DIR && entry->d_name[0] != '.') out.push_back(folder + "/" + entry->d_name);
  }
  closedir(dir);
  return out;
}

std::vector<CgroupMount> CgroupMounts() {
  std::vector<CgroupMount> out;
  std::istringstream lines(ReadWholeFile("/proc/self/mountinfo").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    // "id parent major:minor root point options [optional...] - fstype source super_options"
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, device, root;
    CgroupMount mount;
    if (!(head >> id >> parent >> device >> root >> mount.point)) continue;
    std::string source;
    if (!(tail >> mount.fstype >> source >> mount.super_options)) continue;
    if (mount.fstype == "cgroup2" || mount.fstype == "cgroup") out.push_back(mount);
  }
  return out;
}

bool HasOption(const std::string& options, const std::string& wanted) {
  std::istringstream list(options);
  for (std::string option; std::getline(list, option, ',');) {
    if (option == wanted) return true;
  }
  return false;
}

bool HasWord(const std::string& words, const std::string& wanted) {
  std::istringstream list(words);
  for (std::string word; list >> word;) {
    if (word == wanted) return true;
  }
  return false;
}

std::string OwnCgroup(const std::string& controller) {
  std::istringstream lines(ReadWholeFile("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controller,list:/path"
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool match = controller.empty() ? line.compare(0, first, "0") == 0 && controllers.empty()
                                          : HasOption(controllers, controller);
    if (match) return line.substr(second + 1);
  }
  return "";
}

const CgroupMount* V1MountOf(const std::vector<CgroupMount>& mounts, const std::string& controller) {
  for (const CgroupMount& mount : mounts) {
    if (mount.fstype == "cgroup" && HasOption(mount.super_options, controller)) return &mount;
  }
  return nullptr;
}

void RemoveStaleCgroups(const std::string& base) {
  for (const std::string& root : ChildCgroups(base)) {
    const long pid = AgentPidOf(root.substr(root.rfind('/') + 1));
    if (pid == 0 || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    // Frozen is not needed: nothing of a gone agent starts processes here
    // but its ranks, and those are killed over and over until none is
    // left. A killed process leaves cgroup.procs before the kernel is done
    // with it, and only then may its cgroup go: so removal is tried again
    // too (bounded: one that will not die is left for the next start).
    for (int round = 0; round < 100; ++round) {
      for (int member : CgroupMembers(root)) kill(member, SIGKILL);
      if (RemoveCgroupTree(root)) break;
      usleep(10'000);
    }
  }
}

Result<std::string> MakeCgroupBelow(const std::string& mount, const std::string& own, const std::string& name) {
  std::string base = own.empty() || own == "/" ? mount : mount + own;
  RemoveStaleCgroups(base);
  std::string path = base + "/" + name;
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Unavailable(fmt::format("cannot make {}: {}", path, std::strerror(errno)));
  }
  if (access((path + "/cgroup.procs").c_str(), W_OK) != 0) {
    const int error = errno;
    rmdir(path.c_str());
    return Status::Unavailable(fmt::format("cannot write {}/cgroup.procs: {}", path, std::strerror(error)));
  }
  return path;
}

bool WriteCgroupFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int error = errno;
  close(fd);
  errno = error;
  return ok;
}

std::vector<int> CgroupMembers(const std::string& folder) {
  std::vector<int> out;
  std::istringstream in(ReadWholeFile(folder + "/cgroup.procs").value_or(""));
  for (int pid; in >> pid;) out.push_back(pid);
  for (const std::string& child : ChildCgroups(folder)) {
    std::vector<int> below = CgroupMembers(child);
    out.insert(out.end(), below.begin(), below.end());
  }
  return out;
}

bool RemoveCgroupTree(const std::string& folder) {
  for (const std::string& child : ChildCgroups(folder)) RemoveCgroupTree(child);
  return rmdir(folder.c_str()) == 0 || errno == ENOENT;
}

}  // namespace clusterd
