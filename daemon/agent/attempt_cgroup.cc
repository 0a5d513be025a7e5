#include "daemon/agent/attempt_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

namespace {

// How long KillAll keeps freezing and killing before it gives up on a
// member that will not go (one stuck in the kernel, say).
constexpr auto kKillBound = std::chrono::seconds(5);

struct Mount {
  std::string point;
  std::string fstype;
  std::string super_options;
};

std::vector<Mount> CgroupMounts() {
  std::vector<Mount> out;
  std::istringstream lines(ReadWholeFile("/proc/self/mountinfo").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    // "id parent major:minor root point options [optional...] - fstype source super_options"
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, device, root;
    Mount mount;
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

// This process's cgroup in the hierarchy with `controller` ("" for v2's).
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

// Removes the empty cgroups of agents that are gone ("clusterd-PID" whose
// PID is no process): a machine that lost its daemons and launcher at
// once (SIGKILL of all, a crash) left them. One that still holds
// processes is left alone (rmdir refuses it).
void RemoveStale(const std::string& base) {
  DIR* dir = opendir(base.c_str());
  if (!dir) return;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("clusterd-", 0) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + 9, &end, 10);
    if (pid <= 0 || *end != '\0' || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string root = base + "/" + name;
    if (DIR* attempts = opendir(root.c_str())) {
      while (dirent* attempt = readdir(attempts)) {
        if (attempt->d_type == DT_DIR && attempt->d_name[0] != '.') rmdir((root + "/" + attempt->d_name).c_str());
      }
      closedir(attempts);
    }
    rmdir(root.c_str());
  }
  closedir(dir);
}

// Makes `name` below the cgroup at mount+own; its path, or why not.
Result<std::string> MakeBelow(const std::string& mount, const std::string& own, const std::string& name) {
  std::string base = own.empty() || own == "/" ? mount : mount + own;
  RemoveStale(base);
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

bool WriteTo(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

}  // namespace

const char* ContainmentName(ContainmentKind kind) {
  switch (kind) {
    case ContainmentKind::kCgroupV2:
      return "cgroup v2";
    case ContainmentKind::kCgroupV1:
      return "cgroup v1";
    case ContainmentKind::kSubreaper:
      break;
  }
  return "subreaper";
}

Result<Containment> Containment::Detect(const std::string& mode, const std::string& name) {
  Containment out;
  if (mode == "subreaper") {
    out.why_not = "the node's containment setting is subreaper";
    return out;
  }
  if (mode != "auto") {
    return Status::InvalidArgument(fmt::format("--containment: expected auto or subreaper, got '{}'", mode));
  }
  std::vector<std::string> why;
  const std::vector<Mount> mounts = CgroupMounts();
  for (const Mount& mount : mounts) {
    if (mount.fstype != "cgroup2") continue;
    auto made = MakeBelow(mount.point, OwnCgroup(""), name);
    if (made.ok()) {
      out.kind = ContainmentKind::kCgroupV2;
      out.root = *made;
      return out;
    }
    why.push_back(made.status().message());
  }
  for (const Mount& mount : mounts) {
    if (mount.fstype != "cgroup" || !HasOption(mount.super_options, "freezer")) continue;
    auto made = MakeBelow(mount.point, OwnCgroup("freezer"), name);
    if (made.ok()) {
      out.kind = ContainmentKind::kCgroupV1;
      out.root = *made;
      return out;
    }
    why.push_back(made.status().message());
  }
  out.why_not = why.empty() ? "no cgroup v2 hierarchy and no cgroup v1 freezer is mounted"
                            : fmt::format("{}", fmt::join(why, "; "));
  return out;
}

void Containment::RemoveRoot() const {
  if (!root.empty()) rmdir(root.c_str());
}

AttemptCgroup::AttemptCgroup(ContainmentKind kind, const std::string& root, const std::string& name)
    : kind_(kind), path_(root + "/" + name) {}

Status AttemptCgroup::Create() const {
  if (mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot make the attempt's cgroup {}: {}", path_, std::strerror(errno)));
  }
  return Status::Ok();
}

Status AttemptCgroup::Add(int pid) const {
  if (!WriteTo(path_ + "/cgroup.procs", fmt::format("{}\n", pid))) {
    return Status::IOError(fmt::format("cannot move pid {} into {}: {}", pid, path_, std::strerror(errno)));
  }
  return Status::Ok();
}

std::vector<int> AttemptCgroup::Members() const {
  std::vector<int> out;
  std::istringstream in(ReadWholeFile(path_ + "/cgroup.procs").value_or(""));
  for (int pid; in >> pid;) out.push_back(pid);
  return out;
}

int AttemptCgroup::KillAll() const {
  std::vector<int> members = Members();
  const int found = static_cast<int>(members.size());
  if (members.empty()) return 0;
  // One write kills every member at once, those forking meanwhile included.
  if (kind_ == ContainmentKind::kCgroupV2 && WriteTo(path_ + "/cgroup.kill", "1")) return found;
  // Else frozen first: a member cannot fork a new one between the listing and the kill.
  const bool v2 = kind_ == ContainmentKind::kCgroupV2;
  const std::string freeze = path_ + (v2 ? "/cgroup.freeze" : "/freezer.state");
  const auto give_up = std::chrono::steady_clock::now() + kKillBound;
  while (!members.empty() && std::chrono::steady_clock::now() < give_up) {
    WriteTo(freeze, v2 ? "1" : "FROZEN");
    for (int pid : members) kill(pid, SIGKILL);
    WriteTo(freeze, v2 ? "0" : "THAWED");  // a frozen process dies of SIGKILL only once thawed
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    members = Members();
  }
  return found;
}

bool AttemptCgroup::Remove() const { return rmdir(path_.c_str()) == 0 || errno == ENOENT; }

}  // namespace clusterd
