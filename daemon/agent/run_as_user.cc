#include "daemon/agent/run_as_user.h"

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

namespace clusterd {

namespace {

bool Listed(const std::string& allowed, const std::string& name) {
  std::istringstream list(allowed);
  for (std::string entry; std::getline(list, entry, ',');) {
    size_t begin = entry.find_first_not_of(" \t"), end = entry.find_last_not_of(" \t");
    if (begin != std::string::npos && entry.substr(begin, end - begin + 1) == name) return true;
  }
  return false;
}

// nftw's callback has no room for a context: the keeper is single-threaded.
uid_t tree_uid;
gid_t tree_gid;
int tree_errno;
std::string tree_failed;

int GiveOne(const char* path, const struct stat*, int, FTW*) {
  if (lchown(path, tree_uid, tree_gid) != 0) {
    tree_errno = errno;
    tree_failed = path;
    return 1;
  }
  return 0;
}

}  // namespace

Result<RunAsUser> ResolveRunAs(const std::string& name, bool asked_by_job, const std::string& allowed) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  int error = getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (found == nullptr) {
    return Status::NotFound(fmt::format("run_as: user '{}' does not exist{}", name,
                                        error != 0 ? fmt::format(" ({})", std::strerror(error)) : ""));
  }
  RunAsUser user;
  user.name = name;
  user.uid = found->pw_uid;
  user.gid = found->pw_gid;
  user.home = found->pw_dir ? found->pw_dir : "/";
  if (asked_by_job) {
    if (allowed == "*" && user.uid == 0) {
      return Status::FailedPrecondition(fmt::format(
          "run_as: user '{}' is root (uid 0), which this node's allowed_run_as (*: any user but root) refuses", name));
    }
    if (allowed != "*" && !Listed(allowed, name)) {
      return Status::FailedPrecondition(
          fmt::format("run_as: user '{}' is not in this node's allowed_run_as ({})", name,
                      allowed.empty() ? "empty: no job may choose its user" : allowed));
    }
  }
  if (geteuid() != 0 && user.uid != geteuid()) {
    return Status::FailedPrecondition(fmt::format(
        "run_as: running ranks as '{}' (uid {}) needs the node's daemon to run as root; it runs as uid {}", name,
        user.uid, geteuid()));
  }
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (getgrouplist(name.c_str(), user.gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    getgrouplist(name.c_str(), user.gid, groups.data(), &count);
  }
  groups.resize(static_cast<size_t>(count));
  user.groups = std::move(groups);
  return user;
}

Status GiveTree(const std::string& dir, const RunAsUser& user) {
  tree_uid = user.uid;
  tree_gid = user.gid;
  tree_failed.clear();
  if (nftw(dir.c_str(), GiveOne, 32, FTW_PHYS) != 0) {
    if (tree_failed.empty()) return Status::IOError(fmt::format("cannot walk {}: {}", dir, std::strerror(errno)));
    return Status::IOError(
        fmt::format("cannot give {} to user '{}': {}", tree_failed, user.name, std::strerror(tree_errno)));
  }
  return Status::Ok();
}

void LetPassTo(const std::string& path) {
  std::string dir = path;
  while (true) {
    size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos || slash == 0) return;
    dir.resize(slash);
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    if ((st.st_mode & S_IXOTH) == 0) chmod(dir.c_str(), (st.st_mode & 07777) | S_IXOTH);
  }
}

void SetUserEnvironment(const RunAsUser& user, std::vector<std::string>* env) {
  auto set = [&](const std::string& key, const std::string& value) {
    const std::string prefix = key + "=";
    for (std::string& entry : *env) {
      if (entry.compare(0, prefix.size(), prefix) == 0) {
        entry = prefix + value;
        return;
      }
    }
    env->push_back(prefix + value);
  };
  set("HOME", user.home);
  set("USER", user.name);
  set("LOGNAME", user.name);
}

}  // namespace clusterd
